// Provider and model performance (GET performance) and provider health
// (overview.providers): the answer's shapes and the pure helpers the
// Models and Reliability pages share.
import type { ChartConfiguration } from 'chart.js'
import { ms } from './format'

export type PerfWindow = 'hour' | 'day'

// spanMax is each window's retention: the largest span the route takes.
export const spanMax: Record<PerfWindow, number> = { hour: 48, day: 35 }

// PerfFigures is one row or point. timeouts/failovers are kind=provider
// only; the percentiles are present only with latency on and samples.
export interface PerfFigures {
  attempts: number
  failures: number
  timeouts?: number
  failovers?: number
  count: number
  p50Ms?: number
  p95Ms?: number
  p99Ms?: number
  ttfbP50Ms?: number
  ttfbP95Ms?: number
  overflow?: boolean
}

export interface PerfRow extends PerfFigures {
  id: string
}

export interface PerfPoint extends PerfFigures {
  bucket: string
}

// PerfAnswer is GET performance; with series=1 rows is [] and
// buckets/points carry one provider's figures.
export interface PerfAnswer {
  kind: 'provider' | 'model'
  window: PerfWindow
  span: number
  offset: number
  latencyEnabled: boolean
  rows: PerfRow[]
  buckets?: string[]
  points?: PerfPoint[]
}

// failureRate is failures / attempts, null without attempts (no rate,
// not 0%).
export function failureRate(f: { attempts: number; failures: number }): number | null {
  return f.attempts > 0 ? f.failures / f.attempts : null
}

// overThreshold says a rate is worth highlighting (threshold a ratio).
export function overThreshold(rate: number | null, threshold: number): boolean {
  return rate !== null && rate > threshold
}

// clampSpan keeps a span inside 1..the window's retention.
export function clampSpan(window: PerfWindow, span: number): number {
  if (!Number.isFinite(span)) return 1
  return Math.min(spanMax[window], Math.max(1, Math.round(span)))
}

// bucketLabel turns a bucket id ("2026112921" hour, "20261129" day) into
// a short axis label ("11-29 21h", "11-29").
export function bucketLabel(bucket: string): string {
  const md = bucket.slice(4, 6) + '-' + bucket.slice(6, 8)
  return bucket.length >= 10 ? md + ' ' + bucket.slice(8, 10) + 'h' : md
}

// seriesChart is the attempts/failures-per-bucket bar chart of one
// provider's series answer.
export function seriesChart(answer: PerfAnswer): ChartConfiguration<'bar'> {
  const points = answer.points ?? []
  return {
    type: 'bar',
    data: {
      labels: points.map((p) => bucketLabel(p.bucket)),
      datasets: [
        { label: 'attempts', data: points.map((p) => p.attempts), backgroundColor: '#54aeff' },
        { label: 'failures', data: points.map((p) => p.failures), backgroundColor: '#ff8182' },
        { label: 'timeouts', data: points.map((p) => p.timeouts ?? 0), backgroundColor: '#d4a72c' },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      scales: { y: { beginAtZero: true, ticks: { precision: 0 } } },
    },
  }
}

// OverviewProvider is one overview.providers[] entry (the counters and
// modelRates are absent when the counter read failed).
export interface OverviewProvider {
  name: string
  type: string
  baseUrl: string
  modelCount: number
  discoveryEnabled: boolean
  lastRefresh: string
  healthState: 'closed' | 'open' | 'half-open'
  openUntil: string
  attemptsDay?: number
  failuresDay?: number
  attemptsMinute?: number
  failuresMinute?: number
  modelRates?: Record<string, { attemptsDay: number; failuresDay: number }>
}

// isZeroTime: Go's zero time (or nothing) — "never", not a date.
export function isZeroTime(t: string | null | undefined): boolean {
  return !t || t.startsWith('0001-01-01')
}

// until formats a future time relative to now ("in 3 min"); "due" once
// it has passed.
export function until(t: string, now: number = Date.now()): string {
  const s = Math.round((Date.parse(t) - now) / 1000)
  if (!Number.isFinite(s)) return '—'
  if (s <= 0) return 'due'
  if (s < 60) return 'in ' + s + ' s'
  if (s < 3600) return 'in ' + Math.round(s / 60) + ' min'
  if (s < 86400) return 'in ' + Math.round(s / 3600) + ' h'
  return 'in ' + Math.round(s / 86400) + ' d'
}

// nextProbe is what the discovery breaker will do next: nothing while
// discovery is off, the regular interval while closed, a probe while
// half-open, and the time of the next probe while open.
export function nextProbe(p: OverviewProvider, now: number = Date.now()): string {
  if (!p.discoveryEnabled) return 'discovery off'
  if (p.healthState === 'half-open') return 'probing now'
  if (p.healthState === 'open') return isZeroTime(p.openUntil) ? '—' : 'next probe ' + until(p.openUntil, now)
  return 'on the refresh interval'
}

// ReliabilityRow is one provider's performance row with its failure rate
// and the discovery breaker's state from overview (null when overview
// has not answered or does not know the provider).
export interface ReliabilityRow extends PerfRow {
  rate: number | null
  over: boolean
  healthState: OverviewProvider['healthState'] | null
  discoveryEnabled: boolean | null
}

// reliabilityRows joins the performance rows with overview's providers.
export function reliabilityRows(answer: PerfAnswer | null, providers: OverviewProvider[] | null, threshold: number): ReliabilityRow[] {
  const byName = new Map((providers ?? []).map((p) => [p.name, p]))
  return (answer?.rows ?? []).map((r) => {
    const rate = failureRate(r)
    const p = byName.get(r.id)
    return { ...r, rate, over: overThreshold(rate, threshold), healthState: p?.healthState ?? null, discoveryEnabled: p?.discoveryEnabled ?? null }
  })
}

// busiest is the id with the most attempts (the first on a tie), "" for
// no rows: the provider charted by default.
export function busiest(rows: PerfRow[]): string {
  let best: PerfRow | undefined
  for (const r of rows) if (!best || r.attempts > best.attempts) best = r
  return best?.id ?? ''
}

// latencyText formats a percentile; one past the histogram's last bound
// (overflow) reads "> 600 s": the true value is unknown.
export function latencyText(v: number | undefined, overflow?: boolean): string {
  if (v === undefined) return '—'
  if (overflow && v >= 600000) return '> 600 s'
  return ms(v)
}
