// Each configured limit of a user or group next to what it has used in
// the window the limit counts in, as a share of the limit, and when that
// window ends (the limit resets). Windows are UTC: a minute, the UTC
// day, the UTC month. Token limits count tokens in plus tokens out.

export type LimitName =
  | 'requestsPerMinute'
  | 'requestsPerDay'
  | 'tokensPerDay'
  | 'tokensPerMonth'
  | 'costPerDayMicroUsd'
  | 'costPerMonthMicroUsd'

export type Limits = Partial<Record<LimitName, number>>

export type LimitWindow = 'minute' | 'day' | 'month'

export type LimitUnit = 'requests' | 'tokens' | 'cost'

// UsageRow is one row of GET usage (a user, a group or the total).
export interface UsageRow {
  name: string
  requestsPerMinute: number
  requestsPerDay: number
  rejectionsPerDay: number
  tokensInPerDay: number
  tokensOutPerDay: number
  tokensInPerMonth: number
  tokensOutPerMonth: number
  costPerDayMicroUsd: number
  costPerMonthMicroUsd: number
  lastSeen: number
  limits: Limits | null
  providers?: string[]
  models?: string[]
  mcpServers?: string[]
  agents?: string[]
}

interface LimitSpec {
  name: LimitName
  label: string
  window: LimitWindow
  unit: LimitUnit
  used: (row: UsageRow) => number
}

// limitSpecs, in display order: which window each limit counts in and
// which usage field measures it.
export const limitSpecs: LimitSpec[] = [
  { name: 'requestsPerMinute', label: 'Requests / minute', window: 'minute', unit: 'requests', used: (r) => r.requestsPerMinute },
  { name: 'requestsPerDay', label: 'Requests / day', window: 'day', unit: 'requests', used: (r) => r.requestsPerDay },
  { name: 'tokensPerDay', label: 'Tokens / day', window: 'day', unit: 'tokens', used: (r) => r.tokensInPerDay + r.tokensOutPerDay },
  { name: 'tokensPerMonth', label: 'Tokens / month', window: 'month', unit: 'tokens', used: (r) => r.tokensInPerMonth + r.tokensOutPerMonth },
  { name: 'costPerDayMicroUsd', label: 'Cost / day', window: 'day', unit: 'cost', used: (r) => r.costPerDayMicroUsd },
  { name: 'costPerMonthMicroUsd', label: 'Cost / month', window: 'month', unit: 'cost', used: (r) => r.costPerMonthMicroUsd },
]

export interface LimitUsage {
  name: LimitName
  label: string
  window: LimitWindow
  unit: LimitUnit
  limit: number
  // used and ratio are null when the usage could not be read (never 0).
  used: number | null
  ratio: number | null
  resetsAt: Date
}

// windowEnd is the first instant after the UTC window containing now.
export function windowEnd(w: LimitWindow, now: Date): Date {
  const y = now.getUTCFullYear()
  const m = now.getUTCMonth()
  if (w === 'month') return new Date(Date.UTC(y, m + 1, 1))
  if (w === 'day') return new Date(Date.UTC(y, m, now.getUTCDate() + 1))
  return new Date(Math.floor(now.getTime() / 60000) * 60000 + 60000)
}

// limitUsages lists every configured limit (a 0 or absent one is
// unlimited and left out) with its usage from row; row null or
// undefined means the usage read failed or has no row for the scope.
export function limitUsages(limits: Limits | null | undefined, row: UsageRow | null | undefined, now: Date): LimitUsage[] {
  if (!limits) return []
  const out: LimitUsage[] = []
  for (const spec of limitSpecs) {
    const limit = limits[spec.name]
    if (!limit || limit <= 0) continue
    const used = row ? spec.used(row) : null
    out.push({
      name: spec.name,
      label: spec.label,
      window: spec.window,
      unit: spec.unit,
      limit,
      used,
      ratio: used === null ? null : used / limit,
      resetsAt: windowEnd(spec.window, now),
    })
  }
  return out
}

// untilReset is the time left until at, coarse and readable ("42 s",
// "3 h 12 min", "5 d 4 h").
export function untilReset(at: Date, now: Date): string {
  const s = Math.max(0, Math.round((at.getTime() - now.getTime()) / 1000))
  if (s < 60) return s + ' s'
  const min = Math.floor(s / 60)
  if (min < 60) return min + ' min'
  const h = Math.floor(min / 60)
  if (h < 24) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`
  const d = Math.floor(h / 24)
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`
}
