import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createPinia, setActivePinia } from 'pinia'
import { distinct, eventsEveryMs, filterEvents, useEventsStore, type GatewayEvent } from './events'
import golden from '../fixtures/events-events.json'
import mixed from '../fixtures/events-mixed.json'

const events = mixed.events as GatewayEvent[]

describe('filterEvents', () => {
  const all = { kind: '', user: '', provider: '' }
  it('orders newest first whatever the input order', () => {
    const shuffled = [...events].reverse()
    expect(filterEvents(shuffled, all).map((e) => e.time)).toEqual([...events].map((e) => e.time).sort().reverse())
  })
  it('filters by kind, user, provider and group, together', () => {
    expect(filterEvents(events, { ...all, kind: 'rate_limit' }).every((e) => e.kind === 'rate_limit')).toBe(true)
    expect(filterEvents(events, { ...all, user: 'bob' }).map((e) => e.kind)).toEqual(['upstream', 'rate_limit'])
    expect(filterEvents(events, { ...all, provider: 'p' }).map((e) => e.kind)).toEqual(['failover', 'upstream'])
    expect(filterEvents(events, { ...all, user: 'bob', provider: 'p' }).map((e) => e.kind)).toEqual(['upstream'])
    expect(filterEvents(events, { ...all, group: 'tight' }).map((e) => e.user)).toEqual(['bob', 'bob'])
    expect(filterEvents(events, { ...all, kind: 'capacity', user: 'bob' })).toEqual([])
  })
  it("lists the feed's users, providers and kinds", () => {
    expect(distinct(events, 'user')).toEqual(['alice', 'bob'])
    expect(distinct(events, 'provider')).toEqual(['p', 'zbad'])
    expect(distinct(golden.events as GatewayEvent[], 'kind')).toEqual(['rate_limit'])
  })
})

describe('events store', () => {
  beforeEach(() => {
    setActivePinia(createPinia())
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
    vi.unstubAllGlobals()
  })

  it('reads events?limit=200 and again every 5 s until stopped', async () => {
    const urls: string[] = []
    vi.stubGlobal('fetch', vi.fn(async (u: string) => (urls.push(u), new Response(JSON.stringify(golden), { status: 200 }))))
    const feed = useEventsStore()
    feed.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(urls).toEqual(['/admin/api/events?limit=200'])
    expect(feed.answer?.source).toBe('replica')
    expect(feed.answer?.degraded).toBe(false)
    await vi.advanceTimersByTimeAsync(eventsEveryMs * 2)
    expect(urls).toHaveLength(3)
    feed.stop()
    await vi.advanceTimersByTimeAsync(eventsEveryMs * 3)
    expect(urls).toHaveLength(3)
  })
  it('keeps the last feed and records the error when a read fails', async () => {
    let fail = false
    vi.stubGlobal('fetch', vi.fn(async () => (fail ? new Response('{"error":{"code":"http_500","message":"boom"}}', { status: 500 }) : new Response(JSON.stringify(mixed), { status: 200 }))))
    const feed = useEventsStore()
    await feed.load()
    fail = true
    await feed.load()
    expect(feed.answer?.degraded).toBe(true)
    expect(feed.error?.message).toBe('boom')
  })
})
