import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import catalog from '../fixtures/models-catalog.json'
import overview from '../fixtures/models-overview.json'
import perf from '../fixtures/models-perf.json'
import usage from '../fixtures/models-usage.json'
import { setKey } from '../lib/api'
import { useAuthStore } from './auth'
import { useDashboardStore } from './dashboard'
import { catalogMaxAgeMs, useModelsStore } from './models'

// fakeGateway answers /admin/api/{route} from a table and records every
// URL asked for.
function fakeGateway(answers: Record<string, { status?: number; body: unknown }>) {
  const seen: string[] = []
  vi.stubGlobal('fetch', async (url: string) => {
    seen.push(url)
    const route = url.replace('/admin/api/', '').split('?')[0]
    const a = answers[route] ?? { status: 404, body: { error: { code: 'not_found', message: 'no route' } } }
    return new Response(JSON.stringify(a.body), { status: a.status ?? 200 })
  })
  return seen
}

const storeDown = { status: 503, body: { error: { code: 'store_unavailable', message: 'the counter store is unreachable' } } }

describe('models store', () => {
  beforeEach(() => {
    setActivePinia(createPinia())
    sessionStorage.clear()
    setKey('')
  })
  afterEach(() => vi.unstubAllGlobals())

  it('reads the catalog, usage and latency and joins them with overview', async () => {
    const seen = fakeGateway({ catalog: { body: catalog }, 'usage/models': { body: usage }, performance: { body: perf } })
    useDashboardStore().overview = overview
    const models = useModelsStore()
    await models.refresh(1_000_000)
    expect(seen).toEqual([
      '/admin/api/catalog',
      '/admin/api/usage/models?metric=req&window=day&detail=1&limit=100',
      '/admin/api/performance?kind=model&window=day',
    ])
    expect(models.latencyOn).toBe(true)
    const m1 = models.rows.find((r) => r.id === 'p/m1')
    expect(m1?.usage).toMatchObject({ state: 'ok', requests: 4 })
    expect(m1?.latency?.ttfbP50Ms).toBe(180)
    expect(m1?.success).toEqual({ state: 'ok', attempts: 4, failures: 0 })
  })

  it('reads the catalog at most every five minutes', async () => {
    const seen = fakeGateway({ catalog: { body: catalog }, 'usage/models': { body: usage }, performance: { body: perf } })
    const models = useModelsStore()
    await models.refresh(1_000_000)
    await models.refresh(1_000_000 + catalogMaxAgeMs - 1)
    expect(seen.filter((u) => u === '/admin/api/catalog')).toHaveLength(1)
    await models.refresh(1_000_000 + catalogMaxAgeMs)
    expect(seen.filter((u) => u === '/admin/api/catalog')).toHaveLength(2)
    expect(seen.filter((u) => u.startsWith('/admin/api/usage/models'))).toHaveLength(3)
  })

  it('does not read latency while overview says it is off', async () => {
    const seen = fakeGateway({ catalog: { body: catalog }, 'usage/models': { body: usage } })
    useDashboardStore().overview = { ...overview, features: { ...overview.features, latencyStats: false } }
    const models = useModelsStore()
    await models.refresh()
    expect(seen.some((u) => u.startsWith('/admin/api/performance'))).toBe(false)
    expect(models.latencyOn).toBe(false)
    expect(models.perf).toBeNull()
  })

  it('shows a store outage as unavailable, never zero', async () => {
    fakeGateway({ catalog: { body: catalog }, 'usage/models': storeDown, performance: storeDown })
    useDashboardStore().overview = overview
    const models = useModelsStore()
    await models.refresh()
    expect(models.usageError?.storeDown).toBe(true)
    expect(models.perfError?.storeDown).toBe(true)
    expect(models.rows.length).toBe(10)
    expect(models.rows.every((r) => r.usage.state === 'unavailable')).toBe(true)
  })

  it('sends the key form back on a refused key', async () => {
    fakeGateway({ catalog: { status: 401, body: { error: { code: 'invalid_api_key', message: 'no' } } }, 'usage/models': { body: usage } })
    const auth = useAuthStore()
    auth.login('sk-wrong')
    await useModelsStore().refresh()
    expect(auth.key).toBe('')
    expect(auth.rejected).toBe(true)
  })
})
