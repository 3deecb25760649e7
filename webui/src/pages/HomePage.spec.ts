import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import HomePage from './HomePage.vue'
import ScopePicker from '../components/ScopePicker.vue'
import { useDashboardStore } from '../stores/dashboard'
import { useScopeStore } from '../stores/scope'
import { ApiError } from '../lib/api'
import overview from '../fixtures/home-overview.json'
import usage from '../fixtures/home-usage.json'
import totalsUser from '../fixtures/home-usage-totals-user.json'
import usageModels from '../fixtures/home-usage-models.json'

function routes(input: string) {
  const url = new URL(input, 'http://gw')
  const p = url.pathname.replace('/admin/api/', '')
  const body = p === 'usage/totals' ? totalsUser : p === 'usage/models' ? usageModels : { series: [{ scope: url.searchParams.get('scope'), points: [9] }], unknown: [] }
  return new Response(JSON.stringify(body), { status: 200 })
}

describe('HomePage', () => {
  beforeEach(() => {
    setActivePinia(createPinia())
    vi.stubGlobal('fetch', vi.fn(async (u: string) => routes(u)))
  })
  afterEach(() => vi.unstubAllGlobals())

  function withData() {
    const dash = useDashboardStore()
    dash.overview = overview
    dash.usage = usage
    return dash
  }
  const text = (w: ReturnType<typeof mount>, t: string) => w.get(`[data-test="${t}"]`).text()

  it("shows the total's figures, budgets, tops, providers, pricing and warnings", async () => {
    withData()
    const w = mount(HomePage)
    await flushPromises()
    expect(w.find('[data-test="page-home"]').exists()).toBe(true)
    expect(text(w, 'home-requests-today')).toBe('7')
    expect(text(w, 'home-tokens-today')).toBe('90')
    expect(text(w, 'home-spend-today')).toBe('$0.00020')
    expect(text(w, 'home-requests-month')).toBe('9')
    expect(w.findAll('[data-test="home-budget"]')).toHaveLength(3)
    expect(w.get('[data-test="home-budget"]').text()).toContain('tight')
    expect(w.get('[data-test="home-budget"]').text()).toContain('200%')
    expect(w.findAll('[data-test="home-top-user"]').map((r) => r.attributes('data-id'))).toEqual(['alice', 'bob', 'carol'])
    expect(w.findAll('[data-test="home-top-model"]')).toHaveLength(5)
    expect(w.get('[data-test="home-top-models"]').text()).toContain('free')
    const providers = w.findAll('[data-test="home-provider"]')
    expect(providers).toHaveLength(5)
    expect(providers[1].text()).toContain('open')
    expect(providers[2].text()).toContain('100%')
    expect(providers[4].text()).toContain('0%')
    expect(text(w, 'home-pricing-priced')).toBe('5')
    expect(text(w, 'home-warnings')).toContain('bare id routes to "p"')
    w.unmount()
  })

  it('shows unavailable, not zero, when the usage read failed', async () => {
    const dash = withData()
    dash.error = new ApiError(503, 'store_unavailable', 'down')
    const w = mount(HomePage)
    await flushPromises()
    expect(text(w, 'home-requests-today')).toBe('unavailable')
    expect(text(w, 'home-spend-today')).toBe('unavailable')
    expect(text(w, 'home-budgets')).toContain('unavailable')
    w.unmount()
  })

  it("follows the scope: a user's row and budgets", async () => {
    withData()
    useScopeStore().set({ kind: 'user', id: 'carol' })
    const w = mount(HomePage)
    await flushPromises()
    expect(text(w, 'home-scope')).toBe('user carol')
    expect(text(w, 'home-requests-today')).toBe('1')
    expect(w.findAll('[data-test="home-budget"]')).toHaveLength(1)
    expect(w.findAll('[data-test="home-top-user"]').map((r) => r.attributes('data-id'))).toEqual(['carol'])
    w.unmount()
  })

  it('the scope picker offers total, groups and users and sets the scope', async () => {
    withData()
    const w = mount(ScopePicker)
    const options = w.findAll('option').map((o) => o.attributes('value'))
    expect(options).toEqual(['total', 'group:all', 'group:idle', 'group:spenders', 'group:tight', 'user:alice', 'user:bob', 'user:carol', 'user:dave', 'user:erin'])
    await w.get('[data-test="scope-picker"]').setValue('group:tight')
    expect(useScopeStore().scope).toEqual({ kind: 'group', id: 'tight' })
    await w.get('[data-test="scope-picker"]').setValue('total')
    expect(useScopeStore().scope).toEqual({ kind: 'total' })
  })
})
