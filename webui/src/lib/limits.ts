// Limits against usage: what a scope has used of each configured limit
// in that limit's own window, and when the window resets. Windows are
// fixed UTC calendar minutes, days and months (the gateway's own).

import type { Scope } from '../stores/scope'

// LimitName is a limit as the usage route names it (costs in micro-USD).
export type LimitName =
  | 'requestsPerMinute'
  | 'requestsPerDay'
  | 'tokensPerDay'
  | 'tokensPerMonth'
  | 'costPerDayMicroUsd'
  | 'costPerMonthMicroUsd'

export type LimitWindow = 'minute' | 'day' | 'month'

export type Limits = Partial<Record<LimitName, number>>

// UsageRow is one row of GET usage: a user, a group or the total.
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

// UsageAnswer is GET usage.
export interface UsageAnswer {
  users: UsageRow[]
  groups: UsageRow[]
  total: UsageRow
}

// LimitUnit says how a limit's figures are formatted.
export type LimitUnit = 'requests' | 'tokens' | 'micros'

interface LimitDef {
  window: LimitWindow
  unit: LimitUnit
  used: (row: UsageRow) => number
}

// limitDefs: each limit's window, unit and the row's figure it bounds
// (a token limit bounds prompt plus completion tokens).
export const limitDefs: Record<LimitName, LimitDef> = {
  requestsPerMinute: { window: 'minute', unit: 'requests', used: (r) => r.requestsPerMinute },
  requestsPerDay: { window: 'day', unit: 'requests', used: (r) => r.requestsPerDay },
  tokensPerDay: { window: 'day', unit: 'tokens', used: (r) => r.tokensInPerDay + r.tokensOutPerDay },
  tokensPerMonth: { window: 'month', unit: 'tokens', used: (r) => r.tokensInPerMonth + r.tokensOutPerMonth },
  costPerDayMicroUsd: { window: 'day', unit: 'micros', used: (r) => r.costPerDayMicroUsd },
  costPerMonthMicroUsd: { window: 'month', unit: 'micros', used: (r) => r.costPerMonthMicroUsd },
}

// limitLabels name each limit for people.
export const limitLabels: Record<LimitName, string> = {
  requestsPerMinute: 'requests / minute',
  requestsPerDay: 'requests / day',
  tokensPerDay: 'tokens / day',
  tokensPerMonth: 'tokens / month',
  costPerDayMicroUsd: 'spend / day',
  costPerMonthMicroUsd: 'spend / month',
}

// windowReset is when the window holding now (ms since the epoch) ends:
// the next UTC minute, midnight, or first of the month.
export function windowReset(window: LimitWindow, now: number): number {
  const d = new Date(now)
  switch (window) {
    case 'minute':
      return Math.floor(now / 60_000) * 60_000 + 60_000
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  }
}

// untilText formats a duration in ms, to its two largest units
// ("45 s", "12 min 5 s", "3 h 20 min", "9 d 4 h").
export function untilText(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000))
  const d = Math.floor(s / 86400)
  const h = Math.floor((s % 86400) / 3600)
  const m = Math.floor((s % 3600) / 60)
  const sec = s % 60
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`
  if (m > 0) return sec > 0 ? `${m} min ${sec} s` : `${m} min`
  return `${sec} s`
}

// BudgetUse is one configured limit of one scope against its usage.
export interface BudgetUse {
  kind: 'user' | 'group'
  scope: string
  limit: LimitName
  window: LimitWindow
  unit: LimitUnit
  used: number
  max: number
  // ratio is used / max (above 1: over the limit; requests count refused
  // ones too).
  ratio: number
  resetsAt: number
}

// budgetUses lists a row's configured limits (a missing or zero limit is
// unlimited and left out).
export function budgetUses(row: UsageRow, kind: 'user' | 'group', now: number): BudgetUse[] {
  const out: BudgetUse[] = []
  for (const [name, max] of Object.entries(row.limits ?? {}) as Array<[LimitName, number]>) {
    const def = limitDefs[name]
    if (!def || !max || max <= 0) continue
    const used = def.used(row)
    out.push({ kind, scope: row.name, limit: name, window: def.window, unit: def.unit, used, max, ratio: used / max, resetsAt: windowReset(def.window, now) })
  }
  return out
}

// tightestBudgets answers the n limits closest to (or past) their bound,
// highest ratio first (ties: the sooner reset, then the name). The total
// scope looks at every user and group; a user or group scope at its own
// row only.
export function tightestBudgets(usage: UsageAnswer, scope: Scope, now: number, n = 5): BudgetUse[] {
  const all: BudgetUse[] = []
  for (const row of usage.users) if (scope.kind === 'total' || (scope.kind === 'user' && scope.id === row.name)) all.push(...budgetUses(row, 'user', now))
  for (const row of usage.groups) if (scope.kind === 'total' || (scope.kind === 'group' && scope.id === row.name)) all.push(...budgetUses(row, 'group', now))
  all.sort((a, b) => b.ratio - a.ratio || a.resetsAt - b.resetsAt || a.scope.localeCompare(b.scope) || a.limit.localeCompare(b.limit))
  return all.slice(0, n)
}

// scopeRow is the usage row the scope shows: the total, or that user's
// or group's (undefined when it has none, e.g. a departed user).
export function scopeRow(usage: UsageAnswer, scope: Scope): UsageRow | undefined {
  if (scope.kind === 'total') return usage.total
  const rows = scope.kind === 'user' ? usage.users : usage.groups
  return rows.find((r) => r.name === scope.id)
}
