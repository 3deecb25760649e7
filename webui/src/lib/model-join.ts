// The Models page's one table: the catalog joined, by canonical
// provider/model id, with usage per model (GET usage/models, detail),
// latency per model (GET performance, kind=model) and the success rate
// per model (overview.providers[].modelRates).
import type { OverviewProvider, PerfAnswer, PerfRow } from './perf'

export type PriceSource = 'override' | 'builtin' | 'litellm' | 'free' | 'unpriced'

// CatalogModel is one GET catalog model; prices are micro-USD per
// 1,000,000 tokens, absent when billing has no price.
export interface CatalogModel {
  id: string
  model: string
  contextWindow?: number
  inputPerMTokMicroUsd?: number
  outputPerMTokMicroUsd?: number
  priceSource: PriceSource
  displayFree: boolean
  aliases: string[]
}

export interface Catalog {
  providers: { name: string; type: string; models: CatalogModel[] }[]
  aliases: { alias: string; target: string; targets: string[]; provider?: string }[]
}

// ModelUsage is one GET usage/models entry with detail=1; cacheHits and
// cacheSavedMicroUsd only with the response cache on (day/month).
export interface ModelUsage {
  id: string
  value: number
  requests: number
  tokensIn: number
  tokensOut: number
  costMicroUsd: number
  free: boolean
  priceSource: PriceSource
  r402: number
  cacheHits?: number
  cacheSavedMicroUsd?: number
}

export interface UsageModelsAnswer {
  metric: string
  window: string
  span: number
  offset: number
  models: ModelUsage[]
}

// UsageCell is a row's usage: the figures; "unavailable" when the read
// failed (never zeros); "unranked" when the answer was cut at its limit
// before reaching this model (unknown, not zero).
export type UsageCell =
  | { state: 'ok'; requests: number; tokensIn: number; tokensOut: number; costMicroUsd: number; r402: number; cacheHits?: number; cacheSavedMicroUsd?: number }
  | { state: 'unavailable' }
  | { state: 'unranked' }

// SuccessCell is a row's day success figures from overview; null when
// overview has no entry for the model.
export type SuccessCell = { state: 'ok'; attempts: number; failures: number } | { state: 'unavailable' } | null

export interface ModelRow {
  id: string
  provider: string
  model: string
  inCatalog: boolean
  contextWindow: number | null
  inputPerMTokMicroUsd: number | null
  outputPerMTokMicroUsd: number | null
  priceSource: PriceSource | null
  free: boolean
  aliases: string[]
  usage: UsageCell
  latency: PerfRow | null
  success: SuccessCell
}

export interface JoinInput {
  catalog: Catalog | null
  // usage: null when the read failed.
  usage: UsageModelsAnswer | null
  // usageLimit: the limit the usage read asked for.
  usageLimit: number
  perf: PerfAnswer | null
  providers: OverviewProvider[] | null
}

// splitId splits a canonical id at its first slash (a model id may hold
// more slashes: "router/openai/gpt-4o").
export function splitId(id: string): { provider: string; model: string } {
  const i = id.indexOf('/')
  return i < 0 ? { provider: '', model: id } : { provider: id.slice(0, i), model: id.slice(i + 1) }
}

// successRate is 1 − failures/attempts; null without attempts.
export function successRate(s: SuccessCell): number | null {
  if (!s || s.state !== 'ok' || s.attempts === 0) return null
  return 1 - s.failures / s.attempts
}

function usageCell(u: ModelUsage | undefined, input: JoinInput): UsageCell {
  if (!input.usage) return { state: 'unavailable' }
  if (!u) {
    // The route lists only models with usage, up to its limit: absent
    // from a full answer is unknown, absent from a shorter one is zero.
    if (input.usage.models.length >= input.usageLimit) return { state: 'unranked' }
    const zero: UsageCell = { state: 'ok', requests: 0, tokensIn: 0, tokensOut: 0, costMicroUsd: 0, r402: 0 }
    if (input.usage.models.some((m) => m.cacheHits !== undefined)) Object.assign(zero, { cacheHits: 0, cacheSavedMicroUsd: 0 })
    return zero
  }
  const cell: UsageCell = { state: 'ok', requests: u.requests, tokensIn: u.tokensIn, tokensOut: u.tokensOut, costMicroUsd: u.costMicroUsd, r402: u.r402 }
  if (u.cacheHits !== undefined) cell.cacheHits = u.cacheHits
  if (u.cacheSavedMicroUsd !== undefined) cell.cacheSavedMicroUsd = u.cacheSavedMicroUsd
  return cell
}

function successCell(provider: string, model: string, byName: Map<string, OverviewProvider>): SuccessCell {
  const p = byName.get(provider)
  if (!p) return null
  if (!p.modelRates) return { state: 'unavailable' }
  const r = p.modelRates[model]
  return r ? { state: 'ok', attempts: r.attemptsDay, failures: r.failuresDay } : null
}

// joinModels builds one row per catalog model, plus one per model with
// usage that the (at most 5-minute-old) catalog does not list yet;
// sorted by requests descending, then id.
export function joinModels(input: JoinInput): ModelRow[] {
  const usageById = new Map((input.usage?.models ?? []).map((u) => [u.id, u]))
  const perfById = new Map((input.perf?.rows ?? []).map((r) => [r.id, r]))
  const providers = new Map((input.providers ?? []).map((p) => [p.name, p]))
  const rows: ModelRow[] = []
  const seen = new Set<string>()

  for (const prov of input.catalog?.providers ?? []) {
    for (const m of prov.models) {
      seen.add(m.id)
      const u = usageById.get(m.id)
      rows.push({
        id: m.id,
        provider: prov.name,
        model: m.model,
        inCatalog: true,
        contextWindow: m.contextWindow ?? null,
        inputPerMTokMicroUsd: m.inputPerMTokMicroUsd ?? null,
        outputPerMTokMicroUsd: m.outputPerMTokMicroUsd ?? null,
        priceSource: m.priceSource,
        free: m.displayFree || m.priceSource === 'free' || (u?.free ?? false),
        aliases: m.aliases ?? [],
        usage: usageCell(u, input),
        latency: perfById.get(m.id) ?? null,
        success: successCell(prov.name, m.model, providers),
      })
    }
  }
  for (const u of input.usage?.models ?? []) {
    if (seen.has(u.id)) continue
    const { provider, model } = splitId(u.id)
    rows.push({
      id: u.id,
      provider,
      model,
      inCatalog: false,
      contextWindow: null,
      inputPerMTokMicroUsd: null,
      outputPerMTokMicroUsd: null,
      priceSource: u.priceSource ?? null,
      free: u.free,
      aliases: [],
      usage: usageCell(u, input),
      latency: perfById.get(u.id) ?? null,
      success: successCell(provider, model, providers),
    })
  }
  return rows.sort((a, b) => requestsOf(b) - requestsOf(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

function requestsOf(r: ModelRow): number {
  return r.usage.state === 'ok' ? r.usage.requests : -1
}

// hasCacheFigures: some row carries the cache columns (the response
// cache is configured and the window is day or month).
export function hasCacheFigures(rows: ModelRow[]): boolean {
  return rows.some((r) => r.usage.state === 'ok' && r.usage.cacheHits !== undefined)
}
