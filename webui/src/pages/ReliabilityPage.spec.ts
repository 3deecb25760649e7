import { flushPromises, mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import overview from '../fixtures/models-overview.json'
import providers from '../fixtures/reliability-providers.json'
import series from '../fixtures/reliability-series.json'
import { useDashboardStore } from '../stores/dashboard'
import ReliabilityPage from './ReliabilityPage.vue'

let seen: string[] = []

function serve(rows: { status?: number; body: unknown }) {
  seen = []
  vi.stubGlobal('fetch', async (url: string) => {
    seen.push(url)
    const a = url.includes('series=1') ? { body: series } : rows
    return new Response(JSON.stringify(a.body), { status: a.status ?? 200 })
  })
}

async function page() {
  const pinia = createPinia()
  setActivePinia(pinia)
  useDashboardStore().overview = overview
  const w = mount(ReliabilityPage, { global: { plugins: [pinia], stubs: { ChartView: true } } })
  await flushPromises()
  return w
}

describe('ReliabilityPage', () => {
  beforeEach(() => serve({ body: providers }))
  afterEach(() => vi.unstubAllGlobals())

  it('lists every provider, highlights failure rates over the threshold, charts one', async () => {
    const w = await page()
    const rows = w.findAll('[data-test="reliability-row"]')
    expect(rows.map((r) => r.attributes('data-id'))).toEqual(['d', 'dfail', 'p', 'q', 'zbad'])
    expect(rows.map((r) => r.attributes('data-over'))).toEqual(['false', 'false', 'false', 'true', 'true'])
    const q = w.get('[data-test="reliability-row"][data-id="q"]')
    expect(q.get('[data-test="reliability-rate"]').text()).toBe('14.3%')
    expect(q.get('[data-test="reliability-p50"]').text()).toBe('875 ms')
    expect(q.text()).toContain('> 600 s')
    expect(w.get('[data-test="reliability-row"][data-id="dfail"] [data-test="reliability-health"]').text()).toBe('open')
    expect(w.get('[data-test="reliability-row"][data-id="p"] [data-test="reliability-health"]').text()).toBe('discovery off')
    expect(w.find('[data-test="reliability-request-path-note"]').text()).toContain('not in the admin API')
    expect(w.get('[data-test="reliability-chart"]').attributes('data-provider')).toBe('p')
    w.unmount()
  })

  it('re-reads on a new window and charts the picked provider', async () => {
    const w = await page()
    await w.get('[data-test="reliability-window"]').setValue('day')
    await flushPromises()
    expect(seen).toContain('/admin/api/performance?kind=provider&window=day&span=14')
    await w.get('[data-test="reliability-row"][data-id="q"] [data-test="reliability-select"]').trigger('click')
    await flushPromises()
    expect(seen.at(-1)).toBe('/admin/api/performance?kind=provider&window=day&span=14&id=q&series=1')
    expect(w.get('[data-test="reliability-chart"]').attributes('data-provider')).toBe('q')
    await w.get('[data-test="reliability-threshold"]').setValue('50')
    expect(w.findAll('[data-test="reliability-row"][data-over="true"]').map((r) => r.attributes('data-id'))).toEqual(['zbad'])
    w.unmount()
  })

  it('says the figures are unavailable when the store is down', async () => {
    serve({ status: 503, body: { error: { code: 'store_unavailable', message: 'down' } } })
    const w = await page()
    expect(w.get('[data-test="reliability-error"]').text()).toContain('unavailable')
    expect(w.find('[data-test="reliability-table"]').exists()).toBe(false)
    w.unmount()
  })
})
