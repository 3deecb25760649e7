import { flushPromises, mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import groupTotals from '../fixtures/spend-totals-group-day.json'
import userTotals from '../fixtures/spend-totals-user-day.json'
import { useAuthStore } from '../stores/auth'
import { useDashboardStore } from '../stores/dashboard'
import SpendPage from './SpendPage.vue'

// A gateway whose series hold 3 per bucket (1 in the previous period);
// status fails every counter read when set.
function fakeGateway(status = 200) {
  vi.stubGlobal('fetch', async (url: string) => {
    const u = new URL(url, 'http://gateway')
    const q = u.searchParams
    const route = u.pathname.replace('/admin/api/', '')
    if (status !== 200) return new Response('{"error":{"code":"store_unavailable","message":"down"}}', { status })
    if (route === 'usage/series') {
      const span = Number(q.get('span'))
      const v = Number(q.get('offset')) ? 1 : 3
      const body = { metric: q.get('metric'), window: q.get('window'), span, offset: 0, buckets: Array(span).fill('20261129'), series: [{ scope: q.get('scope'), points: Array(span).fill(v) }], unknown: [] }
      return new Response(JSON.stringify(body))
    }
    const kind = q.get('kind')
    return new Response(JSON.stringify(kind === 'group' ? groupTotals : userTotals))
  })
}

const chartStub = { template: '<div data-test="chart-stub"></div>' }

function mountPage() {
  return mount(SpendPage, { global: { stubs: { ChartView: chartStub } } })
}

describe('Spend page', () => {
  beforeEach(() => {
    sessionStorage.clear()
    setActivePinia(createPinia())
    useAuthStore().login('sk-admin')
    useDashboardStore().overview = { features: { userModelStats: false, cacheStats: false } }
  })
  afterEach(() => vi.unstubAllGlobals())

  it('shows totals, the change and the chart', async () => {
    fakeGateway()
    const page = mountPage()
    await flushPromises()
    expect(page.find('[data-test="page-spend"]').exists()).toBe(true)
    expect((page.find('[data-test="spend-window"]').element as HTMLSelectElement).value).toBe('day-7')
    const cost = page.find('[data-test="spend-card"][data-metric="cost"]')
    expect(cost.find('[data-test="spend-total"]').text()).toBe('$0.000021')
    expect(cost.find('[data-test="spend-change"]').text()).toBe('+200%')
    expect(page.findAll('[data-test="spend-total"]')[0].text()).toBe('$0.000021')
    expect(page.find('[data-test="spend-chart"] [data-test="chart-stub"]').exists()).toBe(true)
    expect(page.find('[data-test="spend-cache-off"]').exists()).toBe(true)
  })

  it('drills down on a click and says when per-user models are off', async () => {
    fakeGateway()
    const page = mountPage()
    await flushPromises()
    const groups = page.findAll('[data-test="spend-group"]')
    expect(groups.map((g) => g.attributes('data-id'))).toEqual(['all', 'spenders', 'tight'])
    await groups[1].trigger('click')
    await flushPromises()
    expect(page.find('[data-test="spend-users"]').attributes('data-group')).toBe('spenders')
    await page.findAll('[data-test="spend-user"]')[0].trigger('click')
    await flushPromises()
    expect(page.find('[data-test="spend-models"]').text()).toContain('admin.stats.userModel')
  })

  it('switches the span and drops the comparison it cannot make', async () => {
    fakeGateway()
    const page = mountPage()
    await flushPromises()
    await page.find('[data-test="spend-window"]').setValue('hour-48')
    await flushPromises()
    expect(page.find('[data-test="spend-total"]').text()).toBe('$0.00014')
    expect(page.find('[data-test="spend-change"]').text()).toBe('no comparison')
    expect(page.find('[data-test="spend-no-previous"]').exists()).toBe(true)
  })

  it('shows unavailable, not zero, when the store is down', async () => {
    fakeGateway(503)
    const page = mountPage()
    await flushPromises()
    expect(page.find('[data-test="spend-total"]').text()).toBe('unavailable')
    expect(page.find('[data-test="spend-groups"]').text()).toContain('unavailable')
    expect(page.text()).not.toContain('$0')
  })
})
