// Each configured limit of a user or group next to what it has used in
// the window the limit counts in, as a share of the limit, and when that
// window ends (the limit resets). Windows are UTC: a minute, the UTC
// day, the UTC month. Token limits count tokens in plus tokens out.

import { limitDefs, windowReset, type LimitName, type LimitWindow, type Limits, type UsageRow } from './limits'

export type { LimitName, LimitWindow, Limits, UsageRow }

// LimitUnit here names cost "cost" (limits.ts: "micros").
export type LimitUnit = 'requests' | 'tokens' | 'cost'

interface LimitSpec {
  name: LimitName
  label: string
  window: LimitWindow
  unit: LimitUnit
  used: (row: UsageRow) => number
}

// spec is a limit's row of the table: its window and measure are
// limits.ts's (limitDefs), its label and unit this page's.
function spec(name: LimitName, label: string): LimitSpec {
  const d = limitDefs[name]
  return { name, label, window: d.window, unit: d.unit === 'micros' ? 'cost' : d.unit, used: d.used }
}

// limitSpecs, in display order.
export const limitSpecs: LimitSpec[] = [
  spec('requestsPerMinute', 'Requests / minute'),
  spec('requestsPerDay', 'Requests / day'),
  spec('tokensPerDay', 'Tokens / day'),
  spec('tokensPerMonth', 'Tokens / month'),
  spec('costPerDayMicroUsd', 'Cost / day'),
  spec('costPerMonthMicroUsd', 'Cost / month'),
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
  return new Date(windowReset(w, now.getTime()))
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
