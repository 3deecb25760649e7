import { defineStore } from 'pinia'
import { ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import { useAuthStore } from './auth'
import type { Scope } from './scope'

// The Home page's on-demand reads: top users and top models today, and
// this month's requests (the usage row has no month request counter).
// Fetched when the page opens and again with every dashboard poll while
// it is open. Each figure is undefined until first read, and null when
// its read failed ("unavailable", never zero).

// TopRow is one ranked user or model: requests, tokens (in + out) and
// cost (micro-USD) over today.
export interface TopRow {
  id: string
  requests: number
  tokens: number
  cost: number
  free?: boolean
  priceSource?: string
}

interface TotalsAnswer {
  rows: Array<{ id: string; values: Partial<Record<'req' | 'tokin' | 'tokout' | 'cost', number>> }>
  truncated: boolean
}

interface ModelsAnswer {
  models: Array<{ id: string; value: number; requests?: number; tokensIn?: number; tokensOut?: number; costMicroUsd?: number; free?: boolean; priceSource?: string }>
}

interface SeriesAnswer {
  series: Array<{ scope: string; points: number[] }>
  unknown: string[]
}

// HomeFeatures are the overview's feature flags the reads depend on.
export interface HomeFeatures {
  userModelStats?: boolean
}

export const topLimit = 10

// totalsRows turns usage/totals rows into TopRows.
export function totalsRows(a: TotalsAnswer): TopRow[] {
  return a.rows.map((r) => ({ id: r.id, requests: r.values.req ?? 0, tokens: (r.values.tokin ?? 0) + (r.values.tokout ?? 0), cost: r.values.cost ?? 0 }))
}

// modelRows turns usage/models?detail=1 entries into TopRows.
export function modelRows(a: ModelsAnswer): TopRow[] {
  return a.models.map((m) => ({
    id: m.id,
    requests: m.requests ?? 0,
    tokens: (m.tokensIn ?? 0) + (m.tokensOut ?? 0),
    cost: m.costMicroUsd ?? m.value,
    free: m.free,
    priceSource: m.priceSource,
  }))
}

// ProviderHealth is one provider at a glance: the discovery breaker's
// state and today's success rate (null: no attempts today; unavailable:
// the counter read failed).
export interface ProviderHealth {
  name: string
  type: string
  state: string
  attempts: number | null
  failures: number | null
  successRate: number | null
  unavailable: boolean
}

interface OverviewProvider {
  name: string
  type: string
  healthState: string
  attemptsDay?: number
  failuresDay?: number
}

// providerHealth summarizes overview.providers.
export function providerHealth(overview: { providers?: OverviewProvider[]; countersUnavailable?: boolean } | null): ProviderHealth[] {
  return (overview?.providers ?? []).map((p) => {
    const unavailable = !!overview?.countersUnavailable || p.attemptsDay === undefined || p.failuresDay === undefined
    const attempts = unavailable ? null : (p.attemptsDay as number)
    const failures = unavailable ? null : (p.failuresDay as number)
    const successRate = attempts ? (attempts - (failures ?? 0)) / attempts : null
    return { name: p.name, type: p.type, state: p.healthState, attempts, failures, successRate, unavailable }
  })
}

// PricingSummary is overview.pricing folded: priced (override, builtin,
// litellm), free and unpriced catalog ids.
export interface PricingSummary {
  priced: number
  free: number
  unpriced: number
  total: number
  bySource: Record<string, number>
}

export function pricingSummary(p: Record<string, number> | null | undefined): PricingSummary | null {
  if (!p) return null
  const priced = (p.override ?? 0) + (p.builtin ?? 0) + (p.litellm ?? 0)
  const free = p.free ?? 0
  const unpriced = p.unpriced ?? 0
  return { priced, free, unpriced, total: priced + free + unpriced, bySource: { ...p } }
}

function scopeParam(s: Scope): string {
  return s.kind === 'total' ? 'total' : s.kind + ':' + s.id
}

export const useHomeStore = defineStore('home', () => {
  const topUsers = ref<TopRow[] | null | undefined>(undefined)
  // topModelsScope: whose models topModels ranks — everyone's, or the
  // scoped user's own (with admin.stats.userModel).
  const topModels = ref<TopRow[] | null | undefined>(undefined)
  const topModelsScope = ref<'all' | 'user'>('all')
  const requestsMonth = ref<number | null | undefined>(undefined)
  const error = ref<ApiError | null>(null)
  let generation = 0

  function failed(e: unknown): null {
    const err = e instanceof ApiError ? e : new ApiError(0, 'network', String(e))
    if (err.unauthorized) useAuthStore().reject()
    error.value = err
    return null
  }

  async function readUsers(scope: Scope): Promise<TopRow[] | null> {
    if (scope.kind === 'user') {
      const a = await apiGet<TotalsAnswer>('usage/totals', { kind: 'user', window: 'day', limit: 1000 })
      return totalsRows(a).filter((r) => r.id === scope.id)
    }
    const a = await apiGet<TotalsAnswer>('usage/totals', { kind: 'user', window: 'day', limit: topLimit, group: scope.kind === 'group' ? scope.id : undefined })
    return totalsRows(a)
  }

  async function readModels(scope: Scope, features: HomeFeatures): Promise<[TopRow[], 'all' | 'user']> {
    if (scope.kind === 'user' && features.userModelStats) {
      const a = await apiGet<TotalsAnswer>('usage/totals', { kind: 'usermodel', user: scope.id, window: 'day', metrics: 'cost,req,tokin,tokout', limit: topLimit })
      return [totalsRows(a), 'user']
    }
    const a = await apiGet<ModelsAnswer>('usage/models', { metric: 'cost', window: 'day', detail: 1, limit: topLimit })
    return [modelRows(a), 'all']
  }

  // readMonth: undefined when the scope is not known to the gateway
  // (a departed user): no figure rather than a zero.
  async function readMonth(scope: Scope): Promise<number | undefined> {
    const a = await apiGet<SeriesAnswer>('usage/series', { scope: scopeParam(scope), metric: 'req', window: 'month', span: 1 })
    return a.series[0]?.points[0]
  }

  // refresh reads all three; a stale answer (the scope changed while it
  // was in flight) is dropped.
  async function refresh(scope: Scope, features: HomeFeatures = {}) {
    const mine = ++generation
    error.value = null
    const [users, models, month] = await Promise.all([
      readUsers(scope).catch(failed),
      readModels(scope, features).catch(failed),
      readMonth(scope).catch(failed),
    ])
    if (mine !== generation) return
    topUsers.value = users
    topModels.value = models ? models[0] : null
    if (models) topModelsScope.value = models[1]
    requestsMonth.value = month
  }

  return { topUsers, topModels, topModelsScope, requestsMonth, error, refresh }
})
