// Counter reads over time: the span choices the Spend page offers, the
// parameters of usage/series and usage/totals for a span and the one
// before it, sums and period-over-period change, bucket labels, and how
// a failed read is described (a 503 is "unavailable", never zero).
import { ApiError, type Params } from './api'

export type WindowUnit = 'hour' | 'day' | 'month'

// retention is how many buckets of each window the store keeps: a read's
// span plus offset never exceeds it.
export const retention: Record<WindowUnit, number> = { hour: 48, day: 35, month: 13 }

export interface SpanChoice {
  id: string
  unit: WindowUnit
  span: number
  label: string
}

export const spanChoices: SpanChoice[] = [
  { id: 'hour-24', unit: 'hour', span: 24, label: 'Last 24 hours' },
  { id: 'hour-48', unit: 'hour', span: 48, label: 'Last 48 hours' },
  { id: 'day-7', unit: 'day', span: 7, label: 'Last 7 days' },
  { id: 'day-14', unit: 'day', span: 14, label: 'Last 14 days' },
  { id: 'day-30', unit: 'day', span: 30, label: 'Last 30 days' },
  { id: 'month-12', unit: 'month', span: 12, label: 'Last 12 months' },
]

export function choiceById(id: string): SpanChoice | undefined {
  return spanChoices.find((c) => c.id === id)
}

// hasPrevious: the store still holds a whole previous period (offset =
// span), i.e. two spans fit in the window's retention.
export function hasPrevious(c: { unit: WindowUnit; span: number }): boolean {
  return 2 * c.span <= retention[c.unit]
}

export interface SeriesAnswer {
  metric: string
  window: WindowUnit
  span: number
  offset: number
  buckets: string[]
  series: { scope: string; points: number[] }[]
  unknown: string[]
}

export interface TotalsRow {
  id: string
  values: Partial<Record<'req' | 'tokin' | 'tokout' | 'cost', number>>
}

export interface TotalsAnswer {
  kind: string
  window: WindowUnit
  span: number
  offset: number
  metrics: string[]
  rows: TotalsRow[]
  truncated: boolean
}

// seriesParams asks usage/series for the span, or for the span before it.
export function seriesParams(
  scopes: string[],
  metric: string,
  w: { unit: WindowUnit; span: number },
  previous = false,
): Params {
  return { scope: scopes, metric, window: w.unit, span: w.span, offset: previous ? w.span : 0 }
}

// pointsOf is one scope's points; null when the answer lists the scope
// as unknown or does not carry it.
export function pointsOf(answer: SeriesAnswer | null | undefined, scope: string): number[] | null {
  return answer?.series.find((s) => s.scope === scope)?.points ?? null
}

export function sum(points: number[] | null | undefined): number | null {
  if (!points) return null
  return points.reduce((a, b) => a + b, 0)
}

// change is the ratio of the current total to the previous one minus 1
// (0.25: up 25%); null when there is nothing to compare against (no
// previous figure, or a previous total of 0 with a non-zero current).
export function change(current: number | null, previous: number | null): number | null {
  if (current === null || previous === null) return null
  if (previous === 0) return current === 0 ? 0 : null
  return current / previous - 1
}

// signedPercent formats a change ("+25%", "-3.5%", "0%", "—").
export function signedPercent(ratio: number | null): string {
  if (ratio === null || !isFinite(ratio)) return '—'
  const p = (ratio * 100).toFixed(1).replace(/\.0$/, '')
  return ratio > 0 ? '+' + p + '%' : p + '%'
}

// bucketLabel makes a bucket id readable: hour "2026112920" → "11-29
// 20:00", day "20261129" → "2026-11-29", month "202611" → "2026-11".
export function bucketLabel(b: string): string {
  if (b.length === 10) return `${b.slice(4, 6)}-${b.slice(6, 8)} ${b.slice(8, 10)}:00`
  if (b.length === 8) return `${b.slice(0, 4)}-${b.slice(4, 6)}-${b.slice(6, 8)}`
  if (b.length === 6) return `${b.slice(0, 4)}-${b.slice(4, 6)}`
  return b
}

// modelWindow is the window a per-user-model read uses for a choice:
// those counters have day and month buckets only, so an hour span reads
// the UTC days covering it (today and the days before).
export function modelWindow(c: { unit: WindowUnit; span: number }): { unit: WindowUnit; span: number } {
  if (c.unit !== 'hour') return { unit: c.unit, span: c.span }
  return { unit: 'day', span: Math.ceil(c.span / 24) + 1 }
}

// cacheWindow is the window the cache counters are read in: they have
// hour and day buckets only, so a month span reads the last 30 days.
export function cacheWindow(c: { unit: WindowUnit; span: number }): { unit: WindowUnit; span: number } {
  if (c.unit !== 'month') return { unit: c.unit, span: c.span }
  return { unit: 'day', span: 30 }
}

export function windowText(w: { unit: WindowUnit; span: number }): string {
  const unit = { hour: 'hour', day: 'UTC day', month: 'UTC month' }[w.unit]
  return w.span === 1 ? 'this ' + unit : `the last ${w.span} ${unit}s`
}

// failureText describes a failed counter read for the page: a 503 is
// "unavailable" (never drawn as zero), too_many_keys shows the gateway's
// message and asks for a smaller span.
export function failureText(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.storeDown) return 'unavailable: the counter store is unreachable'
    if (e.code === 'too_many_keys') return /span/.test(e.message) ? e.message : e.message + ' — choose a smaller span.'
    return e.message
  }
  return String(e)
}

// asApiError keeps an ApiError and wraps anything else (a network
// failure) as one with status 0.
export function asApiError(e: unknown): ApiError {
  return e instanceof ApiError ? e : new ApiError(0, 'network', String(e))
}
