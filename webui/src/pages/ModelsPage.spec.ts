import { flushPromises, mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import catalog from '../fixtures/models-catalog.json'
import overview from '../fixtures/models-overview.json'
import perf from '../fixtures/models-perf.json'
import usage from '../fixtures/models-usage.json'
import { useDashboardStore } from '../stores/dashboard'
import ModelsPage from './ModelsPage.vue'

function serve(answers: Record<string, { status?: number; body: unknown }>) {
  vi.stubGlobal('fetch', async (url: string) => {
    const a = answers[url.replace('/admin/api/', '').split('?')[0]]
    return new Response(JSON.stringify(a.body), { status: a.status ?? 200 })
  })
}

async function page(over: Partial<typeof overview> = {}) {
  const pinia = createPinia()
  setActivePinia(pinia)
  const dash = useDashboardStore()
  dash.overview = { ...overview, ...over }
  dash.updated = Date.parse('2026-12-01T12:00:00Z')
  const w = mount(ModelsPage, { global: { plugins: [pinia] } })
  await flushPromises()
  return w
}

function cells(w: Awaited<ReturnType<typeof page>>, id: string, test: string): string {
  return w.get(`[data-test="model-row"][data-id="${id}"] [data-test="${test}"]`).text()
}

describe('ModelsPage', () => {
  beforeEach(() => serve({ catalog: { body: catalog }, 'usage/models': { body: usage }, performance: { body: perf } }))
  afterEach(() => vi.unstubAllGlobals())

  it('shows the joined catalog with usage, success rate and latency', async () => {
    const w = await page()
    expect(w.find('[data-test="page-models"]').exists()).toBe(true)
    expect(w.findAll('[data-test="model-row"]')).toHaveLength(10)
    expect(w.find('[data-test="models-latency-off"]').exists()).toBe(false)
    expect(cells(w, 'p/m1', 'model-requests')).toBe('4')
    expect(cells(w, 'p/m1', 'model-cost')).toBe('$0.00020')
    expect(cells(w, 'p/m1', 'model-success')).toBe('100%')
    expect(cells(w, 'p/m1', 'model-p50')).toBe('850 ms')
    expect(cells(w, 'p/m1', 'model-aliases')).toBe('fast')
    expect(cells(w, 'zbad/m1', 'model-success')).toBe('0%')
    expect(cells(w, 'p/tiny:free', 'free-badge')).toBe('free')
    expect(cells(w, 'p/tiny:free', 'model-cost')).toBe('free')
    expect(w.get('[data-test="model-row"][data-id="p/gpt-4o"]').text()).toContain('$2.50')
    w.unmount()
  })

  it('filters by search words and provider', async () => {
    const w = await page()
    await w.get('[data-test="models-search"]').setValue('m1')
    expect(w.findAll('[data-test="model-row"]').map((r) => r.attributes('data-id'))).toEqual(['p/m1', 'zbad/m1'])
    await w.get('[data-test="models-provider-filter"]').setValue('zbad')
    expect(w.findAll('[data-test="model-row"]').map((r) => r.attributes('data-id'))).toEqual(['zbad/m1'])
    expect(w.get('[data-test="models-count"]').text()).toBe('1 of 10 models')
    w.unmount()
  })

  it('hides the latency columns with a note when latency stats are off', async () => {
    const w = await page({ features: { ...overview.features, latencyStats: false } })
    expect(w.find('[data-test="models-latency-off"]').exists()).toBe(true)
    expect(w.find('[data-test="model-p50"]').exists()).toBe(false)
    w.unmount()
  })

  it('shows the discovery breakers with the next probe', async () => {
    const w = await page()
    const rows = w.findAll('[data-test="breaker-row"]')
    expect(rows).toHaveLength(5)
    const dfail = w.get('[data-test="breaker-row"][data-id="dfail"]')
    expect(dfail.get('[data-test="breaker-state"]').text()).toBe('open')
    expect(dfail.get('[data-test="breaker-next"]').text()).toBe('next probe in 4 min')
    w.unmount()
  })

  it('says usage is unavailable when the store is down', async () => {
    const down = { status: 503, body: { error: { code: 'store_unavailable', message: 'down' } } }
    serve({ catalog: { body: catalog }, 'usage/models': down, performance: down })
    const w = await page()
    expect(w.get('[data-test="models-usage-error"]').text()).toContain('counter store is unreachable')
    expect(cells(w, 'p/m1', 'model-requests')).toBe('unavailable')
    expect(cells(w, 'p/m1', 'model-p50')).toBe('—')
    w.unmount()
  })
})
