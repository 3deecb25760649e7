import { defineStore } from 'pinia'
import { ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import { useAuthStore } from './auth'

// The Events page's feed: GET events?limit=200, read on demand and every
// 5 s while the page is open (start on mount, stop on unmount).

// GatewayEvent is one operational event; fields that do not apply to
// its kind are absent.
export interface GatewayEvent {
  time: string
  replica: string
  instance?: string
  user?: string
  group?: string
  model?: string
  provider?: string
  route: string
  kind: string
  message: string
  status?: number
}

// EventsAnswer is GET events. source is "redis" (every replica's) or
// "replica" (this one's ring); degraded: Redis is configured but the
// read fell back to the ring.
export interface EventsAnswer {
  events: GatewayEvent[]
  source: string
  replica: string
  capacity: number
  degraded: boolean
}

// EventFilter narrows the feed client-side; an empty member matches all.
export interface EventFilter {
  kind: string
  user: string
  provider: string
  group?: string
}

// eventKinds are the kinds the gateway emits (the filter also offers any
// other kind present in the feed).
export const eventKinds = ['rate_limit', 'budget', 'store_down', 'upstream', 'timeout', 'unpriced', 'capacity', 'failover']

export const eventsLimit = 200
export const eventsEveryMs = 5000

// filterEvents applies the filter and orders the feed newest first.
export function filterEvents(events: GatewayEvent[], f: EventFilter): GatewayEvent[] {
  return events
    .filter((e) => (!f.kind || e.kind === f.kind) && (!f.user || e.user === f.user) && (!f.provider || e.provider === f.provider) && (!f.group || e.group === f.group))
    .map((e, i) => ({ e, i, t: Date.parse(e.time) }))
    .sort((a, b) => (isNaN(b.t) || isNaN(a.t) ? 0 : b.t - a.t) || a.i - b.i)
    .map((x) => x.e)
}

// distinct lists a field's values present in the feed, sorted.
export function distinct(events: GatewayEvent[], field: 'kind' | 'user' | 'provider'): string[] {
  return [...new Set(events.map((e) => e[field]).filter((v): v is string => !!v))].sort()
}

export const useEventsStore = defineStore('events', () => {
  const answer = ref<EventsAnswer | null>(null)
  const error = ref<ApiError | null>(null)
  const updated = ref(0)
  let timer: ReturnType<typeof setInterval> | undefined

  async function load() {
    try {
      answer.value = await apiGet<EventsAnswer>('events', { limit: eventsLimit })
      error.value = null
      updated.value = Date.now()
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(0, 'network', String(e))
      if (err.unauthorized) useAuthStore().reject()
      error.value = err
    }
  }

  function start() {
    if (timer) return
    void load()
    timer = setInterval(() => void load(), eventsEveryMs)
  }

  function stop() {
    if (timer) clearInterval(timer)
    timer = undefined
  }

  return { answer, error, updated, load, start, stop }
})
