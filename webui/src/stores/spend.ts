import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import {
  asApiError,
  cacheWindow,
  change,
  hasPrevious,
  modelWindow,
  pointsOf,
  seriesParams,
  spanChoices,
  sum,
  type SeriesAnswer,
  type SpanChoice,
  type TotalsAnswer,
} from '../lib/series'
import { useAuthStore } from './auth'
import { useDashboardStore } from './dashboard'
import { useScopeStore } from './scope'

// The Spend page's reads: cost and tokens of the chosen scope over the
// chosen span and the span before it (usage/series), the group → user →
// model drill-down (usage/totals) and the cache counters. Each read keeps
// its own answer and error: a failed read shows why, never zeros.

export type SpendMetric = 'cost' | 'tokin' | 'tokout'
export const spendMetrics: SpendMetric[] = ['cost', 'tokin', 'tokout']

export type CacheMetric = 'csave' | 'chit' | 'cmiss'
const cacheMetrics: CacheMetric[] = ['csave', 'chit', 'cmiss']

// totalsMetrics puts cost first: usage/totals ranks by the first metric.
const totalsMetrics = 'cost,req,tokin,tokout'

export interface Read<T> {
  value: T | null
  error: ApiError | null
  loading: boolean
}

function idle<T>(): Read<T> {
  return { value: null, error: null, loading: false }
}

function perMetric<K extends string>(keys: K[]): Record<K, Read<SeriesAnswer>> {
  return Object.fromEntries(keys.map((k) => [k, idle<SeriesAnswer>()])) as Record<K, Read<SeriesAnswer>>
}

export interface PeriodFigure {
  metric: SpendMetric
  current: number | null
  previous: number | null
  change: number | null
}

export const useSpendStore = defineStore('spend', () => {
  const dash = useDashboardStore()
  const scope = useScopeStore()

  const choice = ref<SpanChoice>(spanChoices[2])
  const chartMetric = ref<SpendMetric>('cost')
  // seriesScope is the scope the series were last read for.
  const seriesScope = ref('total')
  const current = ref(perMetric(spendMetrics))
  const previous = ref(perMetric(spendMetrics))
  const groups = ref(idle<TotalsAnswer>())
  const selectedGroup = ref<string | null>(null)
  const users = ref(idle<TotalsAnswer>())
  const selectedUser = ref<string | null>(null)
  const models = ref(idle<TotalsAnswer>())
  const cache = ref(perMetric(cacheMetrics))

  const comparable = computed(() => hasPrevious(choice.value))
  // featuresKnown: the overview (which carries the feature flags) has been read.
  const featuresKnown = computed(() => dash.overview !== null)
  const userModelEnabled = computed(() => dash.overview?.features?.userModelStats === true)
  const cacheEnabled = computed(() => dash.overview?.features?.cacheStats === true)

  // A read's generation: an answer that arrives after a newer read of the
  // same thing started is dropped.
  const generations = new Map<string, number>()

  async function fill<T>(key: string, r: Read<T>, fetch: () => Promise<T>, keep: boolean): Promise<void> {
    const g = (generations.get(key) ?? 0) + 1
    generations.set(key, g)
    if (!keep) Object.assign(r, idle<T>())
    r.loading = true
    try {
      const v = await fetch()
      if (generations.get(key) !== g) return
      r.value = v
      r.error = null
    } catch (e) {
      if (generations.get(key) !== g) return
      const err = asApiError(e)
      if (err.unauthorized) useAuthStore().reject()
      r.value = null
      r.error = err
    } finally {
      if (generations.get(key) === g) r.loading = false
    }
  }

  function reset(key: string, r: Read<unknown>) {
    generations.set(key, (generations.get(key) ?? 0) + 1)
    Object.assign(r, idle())
  }

  function loadSeries(keep: boolean): Promise<void>[] {
    const s = scope.param()
    seriesScope.value = s
    const w = choice.value
    const jobs: Promise<void>[] = []
    for (const m of spendMetrics) {
      jobs.push(fill('cur:' + m, current.value[m], () => apiGet<SeriesAnswer>('usage/series', seriesParams([s], m, w)), keep))
      if (comparable.value) {
        jobs.push(fill('prev:' + m, previous.value[m], () => apiGet<SeriesAnswer>('usage/series', seriesParams([s], m, w, true)), keep))
      } else reset('prev:' + m, previous.value[m])
    }
    return jobs
  }

  function totalsParams(kind: string): Record<string, string | number> {
    return { kind, window: choice.value.unit, span: choice.value.span, metrics: totalsMetrics }
  }

  function loadGroups(keep: boolean) {
    return fill('groups', groups.value, () => apiGet<TotalsAnswer>('usage/totals', totalsParams('group')), keep)
  }

  function loadUsers(keep: boolean) {
    const g = selectedGroup.value
    if (!g) return Promise.resolve(reset('users', users.value))
    return fill('users', users.value, () => apiGet<TotalsAnswer>('usage/totals', { ...totalsParams('user'), group: g }), keep)
  }

  function loadModels(keep: boolean) {
    const u = selectedUser.value
    if (!u || !userModelEnabled.value) return Promise.resolve(reset('models', models.value))
    const w = modelWindow(choice.value)
    const params = { kind: 'usermodel', user: u, window: w.unit, span: w.span, metrics: totalsMetrics }
    return fill('models', models.value, () => apiGet<TotalsAnswer>('usage/totals', params), keep)
  }

  function loadCache(keep: boolean): Promise<void>[] {
    if (!cacheEnabled.value) {
      cacheMetrics.forEach((m) => reset('cache:' + m, cache.value[m]))
      return []
    }
    const w = cacheWindow(choice.value)
    return cacheMetrics.map((m) =>
      fill('cache:' + m, cache.value[m], () => apiGet<SeriesAnswer>('usage/series', seriesParams(['total'], m, w)), keep),
    )
  }

  // refresh reads everything the page shows; keep leaves the last answers
  // on screen until the new ones arrive (the periodic refresh), without it
  // they are cleared first (the span or scope changed).
  async function refresh(keep = true): Promise<void> {
    await Promise.all([...loadSeries(keep), loadGroups(keep), loadUsers(keep), loadModels(keep), ...loadCache(keep)])
  }

  function choose(c: SpanChoice) {
    choice.value = c
    return refresh(false)
  }

  function selectGroup(g: string | null) {
    selectedGroup.value = g
    selectedUser.value = null
    reset('models', models.value)
    return loadUsers(false)
  }

  function selectUser(u: string | null) {
    selectedUser.value = u
    return loadModels(false)
  }

  // followScope opens the drill-down at the shared scope's group or user
  // (refresh then reads it).
  function followScope() {
    const s = scope.scope
    if (s.kind === 'group') {
      selectedGroup.value = s.id
      selectedUser.value = null
    } else if (s.kind === 'user') {
      selectedUser.value = s.id
    } else {
      selectedGroup.value = null
      selectedUser.value = null
    }
  }

  function figure(r: Read<SeriesAnswer>): number | null {
    return sum(pointsOf(r.value, seriesScope.value))
  }

  const summary = computed<PeriodFigure[]>(() =>
    spendMetrics.map((m) => {
      const cur = figure(current.value[m])
      const prev = comparable.value ? figure(previous.value[m]) : null
      return { metric: m, current: cur, previous: prev, change: change(cur, prev) }
    }),
  )

  // unknownScope: the series answer lists the scope as unknown (a user
  // that is not active, a group that is not configured).
  const unknownScope = computed(() => current.value.cost.value?.unknown.includes(seriesScope.value) ?? false)

  const cacheSummary = computed(() => {
    const v = (m: CacheMetric) => sum(pointsOf(cache.value[m].value, 'total'))
    const hits = v('chit')
    const misses = v('cmiss')
    const lookups = hits !== null && misses !== null ? hits + misses : null
    return { saved: v('csave'), hits, misses, hitRate: lookups ? hits! / lookups : null }
  })

  return {
    choice,
    chartMetric,
    seriesScope,
    current,
    previous,
    groups,
    selectedGroup,
    users,
    selectedUser,
    models,
    cache,
    comparable,
    featuresKnown,
    userModelEnabled,
    cacheEnabled,
    summary,
    unknownScope,
    cacheSummary,
    refresh,
    choose,
    selectGroup,
    selectUser,
    followScope,
  }
})
