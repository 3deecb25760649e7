import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import overview from '../fixtures/models-overview.json'
import providers from '../fixtures/reliability-providers.json'
import series from '../fixtures/reliability-series.json'
import { useDashboardStore } from './dashboard'
import { useReliabilityStore } from './reliability'

type Answer = { status?: number; body: unknown }

// fakeGateway answers performance reads: the series one (series=1) and
// the per-provider one; every URL is recorded.
function fakeGateway(rows: () => Answer, points: () => Answer = () => ({ body: series })) {
  const seen: string[] = []
  vi.stubGlobal('fetch', async (url: string) => {
    seen.push(url)
    const a = url.includes('series=1') ? points() : rows()
    return new Response(JSON.stringify(a.body), { status: a.status ?? 200 })
  })
  return seen
}

describe('reliability store', () => {
  beforeEach(() => setActivePinia(createPinia()))
  afterEach(() => vi.unstubAllGlobals())

  it('reads every provider over the span, then charts the busiest', async () => {
    const seen = fakeGateway(() => ({ body: providers }))
    useDashboardStore().overview = overview
    const rel = useReliabilityStore()
    await rel.load()
    expect(seen).toEqual([
      '/admin/api/performance?kind=provider&window=hour&span=24',
      '/admin/api/performance?kind=provider&window=hour&span=24&id=p&series=1',
    ])
    expect(rel.selected).toBe('p')
    expect(rel.series?.points).toHaveLength(2)
    expect(rel.rows.filter((r) => r.over).map((r) => r.id)).toEqual(['q', 'zbad'])
    expect(rel.rows.find((r) => r.id === 'dfail')?.healthState).toBe('open')
  })

  it('keeps the span inside the window and follows the threshold', async () => {
    const seen = fakeGateway(() => ({ body: providers }))
    const rel = useReliabilityStore()
    rel.setWindow('day', 48)
    expect(rel.span).toBe(35)
    await rel.load()
    expect(seen[0]).toBe('/admin/api/performance?kind=provider&window=day&span=35')
    rel.threshold = 0.5
    expect(rel.rows.filter((r) => r.over).map((r) => r.id)).toEqual(['zbad'])
  })

  it('charts the provider picked', async () => {
    const seen = fakeGateway(() => ({ body: providers }))
    const rel = useReliabilityStore()
    await rel.load()
    await rel.select('q')
    expect(seen.at(-1)).toBe('/admin/api/performance?kind=provider&window=hour&span=24&id=q&series=1')
    expect(rel.selected).toBe('q')
    await rel.load()
    expect(rel.selected).toBe('q')
  })

  it('reports a store outage instead of rows', async () => {
    const down = { status: 503, body: { error: { code: 'store_unavailable', message: 'down' } } }
    fakeGateway(() => down, () => down)
    const rel = useReliabilityStore()
    rel.selected = 'p'
    await rel.load()
    expect(rel.error?.storeDown).toBe(true)
    expect(rel.answer).toBeNull()
    expect(rel.rows).toEqual([])
    expect(rel.seriesError?.storeDown).toBe(true)
    expect(rel.series).toBeNull()
  })

  it('drops an answer a newer read has superseded', async () => {
    const slow = '/admin/api/performance?kind=provider&window=hour&span=24'
    let release = () => {}
    vi.stubGlobal('fetch', (url: string) => {
      const body = url.includes('series=1') ? series : url.includes('window=day') ? { ...providers, window: 'day' } : providers
      const answer = () => new Response(JSON.stringify(body))
      if (url === slow) return new Promise<Response>((resolve) => (release = () => resolve(answer())))
      return Promise.resolve(answer())
    })
    const rel = useReliabilityStore()
    const first = rel.load()
    rel.setWindow('day', 7)
    await rel.load()
    expect(rel.answer?.window).toBe('day')
    release()
    await first
    expect(rel.answer?.window).toBe('day')
  })
})
