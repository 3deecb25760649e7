import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createPinia, setActivePinia } from 'pinia'
import { modelRows, pricingSummary, providerHealth, totalsRows, useHomeStore } from './home'
import { useAuthStore } from './auth'
import overview from '../fixtures/home-overview.json'
import totalsUser from '../fixtures/home-usage-totals-user.json'
import totalsUserModel from '../fixtures/home-usage-totals-usermodel.json'
import usageModels from '../fixtures/home-usage-models.json'
import usageSeries from '../fixtures/home-usage-series.json'

type Route = (url: URL) => { status: number; body: unknown }

// fakeFetch answers by route path and records every URL asked for.
function fakeFetch(route: Route, seen: URL[]) {
  return vi.fn(async (input: string) => {
    const url = new URL(input, 'http://gw')
    seen.push(url)
    const { status, body } = route(url)
    return new Response(JSON.stringify(body), { status })
  })
}

const storeDown = { status: 503, body: { error: { code: 'store_unavailable', message: 'the counter store is unreachable' } } }

function goldenRoutes(url: URL) {
  const p = url.pathname.replace('/admin/api/', '')
  if (p === 'usage/totals') return { status: 200, body: url.searchParams.get('kind') === 'usermodel' ? totalsUserModel : totalsUser }
  if (p === 'usage/models') return { status: 200, body: usageModels }
  if (p === 'usage/series') return { status: 200, body: { ...usageSeries, window: 'month', span: 1, buckets: ['202612'], series: [{ scope: url.searchParams.get('scope'), points: [42] }], unknown: [] } }
  return { status: 404, body: { error: { code: 'not_found', message: 'no' } } }
}

describe('home pure views', () => {
  it('turns totals and model answers into rows', () => {
    expect(totalsRows(totalsUser)).toEqual([
      { id: 'alice', requests: 5, tokens: 90, cost: 200 },
      { id: 'bob', requests: 3, tokens: 54, cost: 86 },
      { id: 'carol', requests: 3, tokens: 36, cost: 0 },
    ])
    const models = modelRows(usageModels)
    expect(models[0]).toEqual({ id: 'mock/m1', requests: 4, tokens: 72, cost: 200, free: false, priceSource: 'override' })
    expect(models.find((m) => m.id === 'mock/m3')?.free).toBe(true)
  })
  it('summarizes provider health from the overview golden', () => {
    const rows = providerHealth(overview as never)
    expect(rows.map((r) => [r.name, r.state, r.successRate])).toEqual([
      ['d', 'closed', null],
      ['dfail', 'open', null],
      ['p', 'closed', 1],
      ['q', 'closed', null],
      ['zbad', 'closed', 0],
    ])
    expect(rows.every((r) => !r.unavailable)).toBe(true)
  })
  it('shows unavailable, never zero, when the counters could not be read', () => {
    const down = { ...overview, countersUnavailable: true, providers: overview.providers.map(({ attemptsDay, failuresDay, attemptsMinute, failuresMinute, modelRates, ...p }) => p) }
    const rows = providerHealth(down as never)
    expect(rows.every((r) => r.unavailable && r.attempts === null && r.successRate === null)).toBe(true)
    expect(providerHealth(null)).toEqual([])
  })
  it('folds the pricing summary', () => {
    expect(pricingSummary(overview.pricing)).toEqual({ priced: 5, free: 1, unpriced: 4, total: 10, bySource: overview.pricing })
    expect(pricingSummary(undefined)).toBeNull()
  })
})

describe('home store', () => {
  let seen: URL[]
  beforeEach(() => {
    setActivePinia(createPinia())
    seen = []
  })
  afterEach(() => vi.unstubAllGlobals())

  it('reads top users, top models and the month for the total scope', async () => {
    vi.stubGlobal('fetch', fakeFetch(goldenRoutes, seen))
    const home = useHomeStore()
    expect(home.topUsers).toBeUndefined()
    await home.refresh({ kind: 'total' })
    expect(home.topUsers?.map((r) => r.id)).toEqual(['alice', 'bob', 'carol'])
    expect(home.topModels?.[0].id).toBe('mock/m1')
    expect(home.topModelsScope).toBe('all')
    expect(home.requestsMonth).toBe(42)
    const asked = Object.fromEntries(seen.map((u) => [u.pathname, Object.fromEntries(u.searchParams)]))
    expect(asked['/admin/api/usage/totals']).toEqual({ kind: 'user', window: 'day', limit: '10' })
    expect(asked['/admin/api/usage/models']).toEqual({ metric: 'cost', window: 'day', detail: '1', limit: '10' })
    expect(asked['/admin/api/usage/series']).toEqual({ scope: 'total', metric: 'req', window: 'month', span: '1' })
  })
  it("narrows top users to a group's members", async () => {
    vi.stubGlobal('fetch', fakeFetch(goldenRoutes, seen))
    await useHomeStore().refresh({ kind: 'group', id: 'tight' })
    const totals = seen.find((u) => u.pathname.endsWith('usage/totals'))
    expect(totals?.searchParams.get('group')).toBe('tight')
    expect(seen.find((u) => u.pathname.endsWith('usage/series'))?.searchParams.get('scope')).toBe('group:tight')
  })
  it("shows a user's own row and, with userModel stats, their models", async () => {
    vi.stubGlobal('fetch', fakeFetch(goldenRoutes, seen))
    const home = useHomeStore()
    await home.refresh({ kind: 'user', id: 'bob' }, { userModelStats: true })
    expect(home.topUsers?.map((r) => r.id)).toEqual(['bob'])
    expect(home.topModelsScope).toBe('user')
    expect(home.topModels?.map((r) => r.id)).toEqual(['mock/m1', 'alt/m1', 'alt/z9'])
    const um = seen.find((u) => u.searchParams.get('kind') === 'usermodel')
    expect(um?.searchParams.get('user')).toBe('bob')
    expect(um?.searchParams.get('metrics')).toBe('cost,req,tokin,tokout')
  })
  it('falls back to every model for a user scope without userModel stats', async () => {
    vi.stubGlobal('fetch', fakeFetch(goldenRoutes, seen))
    const home = useHomeStore()
    await home.refresh({ kind: 'user', id: 'bob' })
    expect(home.topModelsScope).toBe('all')
    expect(seen.some((u) => u.searchParams.get('kind') === 'usermodel')).toBe(false)
  })
  it('marks every figure unavailable (null) when the store is down', async () => {
    vi.stubGlobal('fetch', fakeFetch(() => storeDown, seen))
    const home = useHomeStore()
    await home.refresh({ kind: 'total' })
    expect(home.topUsers).toBeNull()
    expect(home.topModels).toBeNull()
    expect(home.requestsMonth).toBeNull()
    expect(home.error?.storeDown).toBe(true)
  })
  it('leaves the month figure empty (not zero) for a scope the gateway does not know', async () => {
    vi.stubGlobal('fetch', fakeFetch((u) => (u.pathname.endsWith('series') ? { status: 200, body: { series: [], unknown: ['user:gone'] } } : goldenRoutes(u)), seen))
    const home = useHomeStore()
    await home.refresh({ kind: 'user', id: 'gone' })
    expect(home.requestsMonth).toBeUndefined()
  })
  it('drops a stale answer when the scope changed meanwhile', async () => {
    let release: () => void = () => {}
    const gate = new Promise<void>((r) => (release = r))
    vi.stubGlobal('fetch', vi.fn(async (input: string) => {
      const url = new URL(input, 'http://gw')
      if (url.searchParams.get('group') === 'slow') await gate
      return new Response(JSON.stringify(goldenRoutes(url).body), { status: 200 })
    }))
    const home = useHomeStore()
    const slow = home.refresh({ kind: 'group', id: 'slow' })
    await home.refresh({ kind: 'user', id: 'alice' })
    release()
    await slow
    expect(home.topUsers?.map((r) => r.id)).toEqual(['alice'])
  })
  it('sends a refused key back to the key form', async () => {
    vi.stubGlobal('fetch', fakeFetch(() => ({ status: 401, body: { error: { code: 'invalid_api_key', message: 'no' } } }), seen))
    const auth = useAuthStore()
    auth.login('sk-wrong')
    await useHomeStore().refresh({ kind: 'total' })
    expect(auth.key).toBe('')
    expect(auth.rejected).toBe(true)
  })
})
