import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import groupTotals from '../fixtures/spend-totals-group-day.json'
import userTotals from '../fixtures/spend-totals-user-day.json'
import modelTotals from '../fixtures/spend-totals-usermodel-month.json'
import { spanChoices } from '../lib/series'
import { useAuthStore } from './auth'
import { useDashboardStore } from './dashboard'
import { useScopeStore } from './scope'
import { useSpendStore } from './spend'

type Answer = { status: number; body: unknown }
type Handler = (route: string, q: URLSearchParams) => Answer | Promise<Answer>

// fakeGateway answers /admin/api/* through handler and records each URL.
function fakeGateway(handler: Handler): string[] {
  const calls: string[] = []
  vi.stubGlobal('fetch', async (url: string) => {
    calls.push(url)
    const u = new URL(url, 'http://gateway')
    const r = await handler(u.pathname.replace('/admin/api/', ''), u.searchParams)
    return new Response(JSON.stringify(r.body), { status: r.status })
  })
  return calls
}

const ok = (body: unknown): Answer => ({ status: 200, body })
const storeDown: Answer = { status: 503, body: { error: { code: 'store_unavailable', message: 'the counter store is unreachable' } } }

// series builds a usage/series answer: every bucket of a known scope
// holds value(metric, offset); "user:nobody" is unknown.
function series(q: URLSearchParams, value: (metric: string, offset: number) => number) {
  const span = Number(q.get('span'))
  const offset = Number(q.get('offset'))
  const scopes = q.getAll('scope')
  return {
    metric: q.get('metric'),
    window: q.get('window'),
    span,
    offset,
    buckets: Array.from({ length: span }, (_, i) => '202611' + String(i + 1).padStart(2, '0')),
    series: scopes.filter((s) => s !== 'user:nobody').map((scope) => ({ scope, points: Array(span).fill(value(q.get('metric')!, offset)) })),
    unknown: scopes.filter((s) => s === 'user:nobody'),
  }
}

// gateway: current cost 3 per bucket, previous 2; tokens 10 and 10.
function gateway(route: string, q: URLSearchParams): Answer {
  if (route === 'usage/series') return ok(series(q, (m, off) => (m === 'cost' ? (off ? 2 : 3) : m === 'chit' ? 1 : m === 'cmiss' ? 3 : 10)))
  if (route === 'usage/totals') {
    const kind = q.get('kind')
    return ok(kind === 'group' ? groupTotals : kind === 'user' ? userTotals : modelTotals)
  }
  return { status: 404, body: { error: { code: 'not_found', message: 'no route' } } }
}

const choice = (id: string) => spanChoices.find((c) => c.id === id)!

describe('spend store', () => {
  beforeEach(() => {
    sessionStorage.clear()
    setActivePinia(createPinia())
    useAuthStore().login('sk-admin')
  })
  afterEach(() => vi.unstubAllGlobals())

  it('reads the span and the previous one for the shared scope', async () => {
    const calls = fakeGateway(gateway)
    useScopeStore().set({ kind: 'group', id: 'spenders' })
    const spend = useSpendStore()
    await spend.refresh(false)
    const seriesCalls = calls.filter((c) => c.includes('usage/series'))
    expect(seriesCalls).toHaveLength(6)
    expect(seriesCalls).toContain('/admin/api/usage/series?scope=group%3Aspenders&metric=cost&window=day&span=7&offset=0')
    expect(seriesCalls).toContain('/admin/api/usage/series?scope=group%3Aspenders&metric=cost&window=day&span=7&offset=7')
    const cost = spend.summary.find((f) => f.metric === 'cost')!
    expect(cost).toEqual({ metric: 'cost', current: 21, previous: 14, change: 0.5 })
    expect(spend.summary.find((f) => f.metric === 'tokin')!.change).toBe(0)
  })

  it('does not ask for a previous period the store no longer keeps', async () => {
    const calls = fakeGateway(gateway)
    const spend = useSpendStore()
    await spend.choose(choice('hour-48'))
    expect(spend.comparable).toBe(false)
    expect(calls.filter((c) => c.includes('offset=48'))).toHaveLength(0)
    expect(spend.summary[0]).toMatchObject({ current: 144, previous: null, change: null })
  })

  it('shows an unreachable store as unavailable, never zero', async () => {
    fakeGateway((route, q) => (route === 'usage/series' ? storeDown : gateway(route, q)))
    const spend = useSpendStore()
    await spend.refresh(false)
    expect(spend.current.cost.error?.storeDown).toBe(true)
    expect(spend.summary[0].current).toBeNull()
    expect(spend.summary[0].change).toBeNull()
  })

  it('keeps the too_many_keys message', async () => {
    const tooMany = { status: 400, body: { error: { code: 'too_many_keys', message: 'this read would touch 20000 counter keys' } } }
    fakeGateway((route, q) => (route === 'usage/totals' ? tooMany : gateway(route, q)))
    const spend = useSpendStore()
    await spend.refresh(false)
    expect(spend.groups.error?.code).toBe('too_many_keys')
    expect(spend.groups.error?.message).toContain('20000')
    expect(spend.groups.value).toBeNull()
  })

  it('marks a scope the gateway does not know', async () => {
    fakeGateway(gateway)
    useScopeStore().set({ kind: 'user', id: 'nobody' })
    const spend = useSpendStore()
    await spend.refresh(false)
    expect(spend.unknownScope).toBe(true)
    expect(spend.summary[0].current).toBeNull()
  })

  it('drills from groups to users to models', async () => {
    const calls = fakeGateway(gateway)
    const spend = useSpendStore()
    await spend.choose(choice('hour-24'))
    expect(calls).toContain('/admin/api/usage/totals?kind=group&window=hour&span=24&metrics=cost%2Creq%2Ctokin%2Ctokout')
    expect(spend.groups.value?.rows.map((r) => r.id)).toEqual(['all', 'spenders', 'tight'])

    await spend.selectGroup('spenders')
    expect(calls).toContain('/admin/api/usage/totals?kind=user&window=hour&span=24&metrics=cost%2Creq%2Ctokin%2Ctokout&group=spenders')
    expect(spend.users.value?.rows[0].id).toBe('alice')

    // admin.stats.userModel off: no read, the page says so.
    await spend.selectUser('alice')
    expect(calls.some((c) => c.includes('kind=usermodel'))).toBe(false)
    expect(spend.models.value).toBeNull()

    useDashboardStore().overview = { features: { userModelStats: true } }
    await spend.selectUser('alice')
    expect(calls).toContain('/admin/api/usage/totals?kind=usermodel&user=alice&window=day&span=2&metrics=cost%2Creq%2Ctokin%2Ctokout')
    expect(spend.models.value?.rows.map((r) => r.id)).toEqual(['mock/m1', 'alt/m1', 'alt/z9'])

    await spend.selectGroup('tight')
    expect(spend.selectedUser).toBeNull()
    expect(spend.models.value).toBeNull()
  })

  it('opens the drill-down at the shared scope', () => {
    fakeGateway(gateway)
    const spend = useSpendStore()
    const scope = useScopeStore()
    scope.set({ kind: 'group', id: 'tight' })
    spend.followScope()
    expect(spend.selectedGroup).toBe('tight')
    scope.set({ kind: 'user', id: 'bob' })
    spend.followScope()
    expect(spend.selectedUser).toBe('bob')
    scope.set({ kind: 'total' })
    spend.followScope()
    expect([spend.selectedGroup, spend.selectedUser]).toEqual([null, null])
  })

  it('reads the cache counters when the cache is on', async () => {
    const calls = fakeGateway(gateway)
    const spend = useSpendStore()
    await spend.refresh(false)
    expect(calls.some((c) => c.includes('metric=csave'))).toBe(false)

    useDashboardStore().overview = { features: { cacheStats: true } }
    await spend.choose(choice('month-12'))
    expect(calls).toContain('/admin/api/usage/series?scope=total&metric=chit&window=day&span=30&offset=0')
    expect(spend.cacheSummary).toEqual({ saved: 300, hits: 30, misses: 90, hitRate: 0.25 })
  })

  it('drops an answer that a newer read overtook', async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((r) => (release = r))
    fakeGateway(async (route, q) => {
      if (route === 'usage/series' && q.get('span') === '7') await held
      return gateway(route, q)
    })
    const spend = useSpendStore()
    const first = spend.refresh(false)
    await spend.choose(choice('day-14'))
    release()
    await first
    expect(spend.current.cost.value?.span).toBe(14)
    expect(spend.summary[0].current).toBe(42)
  })

  it('shows the key form again on a refused key', async () => {
    fakeGateway(() => ({ status: 401, body: { error: { code: 'invalid_api_key', message: 'no' } } }))
    const spend = useSpendStore()
    await spend.refresh(false)
    expect(useAuthStore().key).toBe('')
    expect(useAuthStore().rejected).toBe(true)
  })
})
