// The Config page's change helper: an intended edit (raise a group's
// limit, add a model to a group, turn a group's cache on) becomes a
// paste-ready snippet of just the subtree it changes, built from the
// redacted config view. Nothing is sent anywhere: the operator pastes
// the snippet into their own config (GitOps owns it).

import { emitYaml, type JsonValue } from './yaml-emit'
import type { LimitName, UsageRow } from './limits'

// limitKeys are the config's limit keys (costs in USD, a float).
export const limitKeys = ['requestsPerMinute', 'requestsPerDay', 'tokensPerDay', 'tokensPerMonth', 'costPerDayUSD', 'costPerMonthUSD'] as const
export type ConfigLimitKey = (typeof limitKeys)[number]

export type ChangeIntent =
  | { kind: 'limit'; target: 'group' | 'user'; name: string; key: ConfigLimitKey; value: number }
  | { kind: 'add-model'; group: string; model: string }
  | { kind: 'group-cache'; group: string; enabled: boolean }

// Change is the snippet and what to know before pasting it. format is
// "yaml" for the config, "json" for a users-file entry.
export interface Change {
  format: 'yaml' | 'json'
  // path is where the snippet lands ("groups.eng.limits").
  path: string
  snippet: string
  notes: string[]
  warnings: string[]
}

export type ChangeResult = { ok: true; change: Change } | { ok: false; error: string }

type JsonMap = { [key: string]: JsonValue }

// ChangeContext adds what the config view cannot tell: the active users
// (usage rows), whose limits stand for a users-file user's current ones.
export interface ChangeContext {
  users?: UsageRow[]
}

function asMap(v: JsonValue | undefined): JsonMap | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined
}

function asList(v: JsonValue | undefined): JsonValue[] {
  return Array.isArray(v) ? v : []
}

// groupNames lists the configured groups, sorted.
export function groupNames(config: JsonMap): string[] {
  return Object.keys(asMap(config.groups) ?? {}).sort()
}

// inlineUsers lists the users.inline entries' names, in config order.
export function inlineUsers(config: JsonMap): string[] {
  return asList(asMap(config.users)?.inline).flatMap((u) => {
    const name = asMap(u)?.name
    return typeof name === 'string' ? [name] : []
  })
}

// usageLimitName maps a config limit key to the usage route's name.
const usageLimitName: Record<ConfigLimitKey, LimitName> = {
  requestsPerMinute: 'requestsPerMinute',
  requestsPerDay: 'requestsPerDay',
  tokensPerDay: 'tokensPerDay',
  tokensPerMonth: 'tokensPerMonth',
  costPerDayUSD: 'costPerDayMicroUsd',
  costPerMonthUSD: 'costPerMonthMicroUsd',
}

function numberOr0(v: JsonValue | undefined): number {
  return typeof v === 'number' && isFinite(v) ? v : 0
}

// describeLimit says what setting key from current to value does (0 is
// unlimited).
export function describeLimit(key: ConfigLimitKey, current: number, value: number): string {
  if (value === current) return `${key} stays ${value === 0 ? 'unlimited' : value} (no change)`
  if (value === 0) return `removes the ${key} limit of ${current} (0 is unlimited)`
  if (current === 0) return `sets a ${key} limit of ${value} (unlimited before)`
  return `${value > current ? 'raises' : 'lowers'} ${key} from ${current} to ${value}`
}

function checkLimitValue(key: ConfigLimitKey, value: number): string | undefined {
  if (!Number.isFinite(value) || value < 0) return `${key} must be a number of 0 or more (0 is unlimited)`
  if (key.startsWith('cost')) {
    if (Math.abs(value * 1e6 - Math.round(value * 1e6)) > 1e-6) return `${key} is USD with at most 6 decimals (micro-USD)`
  } else if (!Number.isInteger(value)) return `${key} is a whole number`
  return undefined
}

// currentLimit is a limit's value today (0: unlimited) for a group or an
// inline user from the config view, for a users-file user from its usage
// row (costs back in USD); undefined when the scope is not found.
export function currentLimit(config: JsonMap, target: 'group' | 'user', name: string, key: ConfigLimitKey, ctx: ChangeContext = {}): number | undefined {
  if (target === 'group') {
    const group = asMap(asMap(config.groups)?.[name])
    return group ? numberOr0(asMap(group.limits)?.[key]) : undefined
  }
  const inline = findInline(config, name)
  if (inline) return numberOr0(asMap(inline.limits)?.[key])
  const row = ctx.users?.find((u) => u.name === name)
  if (!row) return undefined
  const v = row.limits?.[usageLimitName[key]] ?? 0
  return key.startsWith('cost') ? v / 1e6 : v
}

function findInline(config: JsonMap, name: string): JsonMap | undefined {
  return asList(asMap(config.users)?.inline).map(asMap).find((u) => u?.name === name)
}

function limitChange(config: JsonMap, intent: Extract<ChangeIntent, { kind: 'limit' }>, ctx: ChangeContext): ChangeResult {
  const bad = checkLimitValue(intent.key, intent.value)
  if (bad) return { ok: false, error: bad }
  const limits = { [intent.key]: intent.value }
  const current = currentLimit(config, intent.target, intent.name, intent.key, ctx) ?? 0
  const unchanged = current === intent.value
  const notes = [describeLimit(intent.key, current, intent.value)]
  if (intent.target === 'group') {
    const group = asMap(asMap(config.groups)?.[intent.name])
    if (!group) return { ok: false, error: `no group "${intent.name}" in the configuration` }
    const existing = asMap(group.limits)
    const others = Object.keys(existing ?? {}).filter((k) => k !== intent.key && numberOr0(existing?.[k]) !== 0)
    if (others.length) notes.push(`merge into the existing groups.${intent.name}.limits: its other limits (${others.join(', ')}) stay as they are`)
    return yamlChange(`groups.${intent.name}.limits`, { groups: { [intent.name]: { limits } } }, notes, unchanged)
  }
  if (findInline(config, intent.name)) {
    notes.push(`users.inline is a list: set limits.${intent.key} in the entry named "${intent.name}" and keep its other keys (apiKey, group, ...)`)
    return yamlChange(`users.inline[name=${intent.name}].limits`, { users: { inline: [{ name: intent.name, limits }] } }, notes, unchanged)
  }
  const file = asMap(config.users)?.file
  if (!ctx.users?.some((u) => u.name === intent.name) || typeof file !== 'string' || !file) return { ok: false, error: `no user "${intent.name}" in users.inline or among the active users` }
  notes.push(`"${intent.name}" comes from the users file ${file} (JSON, reloaded within seconds of a change): set limits.${intent.key} in that user's entry and keep its other keys`)
  const snippet = JSON.stringify({ name: intent.name, limits }, null, 2) + '\n'
  return { ok: true, change: { format: 'json', path: `${file}: users[name=${intent.name}].limits`, snippet, notes, warnings: unchanged ? [unchangedWarning] : [] } }
}

const unchangedWarning = 'nothing to change: the value is already set'

function yamlChange(path: string, tree: JsonMap, notes: string[], unchanged: boolean): ChangeResult {
  const warnings = unchanged ? [unchangedWarning] : []
  return { ok: true, change: { format: 'yaml', path, snippet: emitYaml(tree, { sortKeys: false }), notes, warnings } }
}

// globMatches is path.Match for the "*" and "?" patterns the access
// lists use ("*" does not cross "/"); undefined for a pattern with a
// character class or escape, which it cannot judge.
export function globMatches(pattern: string, value: string): boolean | undefined {
  if (/[[\\]/.test(pattern)) return undefined
  const re = pattern.replace(/[.+^${}()|\]]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')
  return new RegExp('^' + re + '$').test(value)
}

function addModelChange(config: JsonMap, intent: Extract<ChangeIntent, { kind: 'add-model' }>): ChangeResult {
  const model = intent.model.trim()
  if (!model || /\s/.test(model)) return { ok: false, error: 'a model id (or glob) without spaces is needed' }
  const group = asMap(asMap(config.groups)?.[intent.group])
  if (!group) return { ok: false, error: `no group "${intent.group}" in the configuration` }
  const existing = asList(group.models).filter((m): m is string => typeof m === 'string')
  if (existing.includes(model)) return { ok: false, error: `groups.${intent.group}.models already lists "${model}"` }
  const notes = [`adds "${model}" to groups.${intent.group}.models; a list replaces the old one, so the snippet carries the whole list`]
  const warnings: string[] = []
  if (existing.length === 0) warnings.push(`groups.${intent.group}.models is empty today (every model): a list with this one entry restricts the group to "${model}"`)
  const bare = model.includes('/') ? model.slice(model.indexOf('/') + 1) : model
  const covering = existing.find((p) => globMatches(p, model) || globMatches(p, bare))
  if (covering) warnings.push(`"${covering}" already matches "${model}": the group reaches it today`)
  const providers = asList(group.providers).filter((p): p is string => typeof p === 'string')
  if (model.includes('/') && providers.length) {
    const provider = model.slice(0, model.indexOf('/'))
    if (providers.every((p) => globMatches(p, provider) === false)) warnings.push(`groups.${intent.group}.providers does not admit "${provider}": the model stays out of reach until it does`)
  }
  const tree = { groups: { [intent.group]: { models: [...existing, model] } } }
  return { ok: true, change: { format: 'yaml', path: `groups.${intent.group}.models`, snippet: emitYaml(tree, { sortKeys: false }), notes, warnings } }
}

function cacheChange(config: JsonMap, intent: Extract<ChangeIntent, { kind: 'group-cache' }>): ChangeResult {
  const group = asMap(asMap(config.groups)?.[intent.group])
  if (!group) return { ok: false, error: `no group "${intent.group}" in the configuration` }
  const current = group.cache
  const topLevel = asMap(config.cache)?.enabled === true
  const before = current === true ? 'on' : current === false ? 'off' : `inherited from cache.enabled (${topLevel ? 'on' : 'off'})`
  const notes = [`turns the cache ${intent.enabled ? 'on' : 'off'} for requests whose primary group is "${intent.group}" (now: ${before})`]
  const warnings: string[] = []
  if (current === intent.enabled) warnings.push(unchangedWarning)
  if (intent.enabled && !topLevel) warnings.push('the top-level cache is off: a group cache of true without cache.enabled: true (and redis) is a construction error')
  if (!intent.enabled && !topLevel) notes.push('the top-level cache is off already, so this group caches nothing either way')
  const tree = { groups: { [intent.group]: { cache: intent.enabled } } }
  return { ok: true, change: { format: 'yaml', path: `groups.${intent.group}.cache`, snippet: emitYaml(tree, { sortKeys: false }), notes, warnings } }
}

// planChange turns an intent into its snippet, or says why it cannot.
export function planChange(config: JsonMap, intent: ChangeIntent, ctx: ChangeContext = {}): ChangeResult {
  switch (intent.kind) {
    case 'limit':
      return limitChange(config, intent, ctx)
    case 'add-model':
      return addModelChange(config, intent)
    case 'group-cache':
      return cacheChange(config, intent)
  }
}
