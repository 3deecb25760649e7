import { describe, expect, it } from 'vitest'
import { currentLimit, describeLimit, globMatches, groupNames, inlineUsers, limitKeys, planChange, type ChangeResult } from './change-helper'
import type { JsonValue } from './yaml-emit'
import type { UsageAnswer } from './limits'
import configAnswer from '../fixtures/config-config.json'
import usageFixture from '../fixtures/home-usage.json'

type Json = { [key: string]: JsonValue }
const golden = configAnswer.config as unknown as Json
const usage = usageFixture as unknown as UsageAnswer

// A config with more groups than the golden's one: eng has limits, a
// model list and a provider list; ops turns its cache off.
const config: Json = {
  ...golden,
  groups: {
    ...(golden.groups as Json),
    eng: { limits: { requestsPerMinute: 60, requestsPerDay: 1000, tokensPerDay: 0, tokensPerMonth: 0, costPerDayUSD: 2.5, costPerMonthUSD: 0 }, models: ['gpt-*', 'q/claude-haiku-4-5'], providers: ['p', 'q'], cache: null },
    ops: { limits: null, models: null, providers: null, cache: false },
  },
}

function ok(r: ChangeResult) {
  if (!r.ok) throw new Error('expected a change, got: ' + r.error)
  return r.change
}

describe('change-helper: names', () => {
  it('lists groups and inline users from the config view', () => {
    expect(groupNames(config)).toEqual(['all', 'eng', 'ops'])
    expect(inlineUsers(golden)).toEqual(['alice', 'dave'])
    expect(groupNames({})).toEqual([])
    expect(inlineUsers({ users: null })).toEqual([])
    expect(limitKeys).toContain('costPerMonthUSD')
  })
})

describe('change-helper: limits', () => {
  it('raises a group limit: the snippet is just that subtree', () => {
    const c = ok(planChange(config, { kind: 'limit', target: 'group', name: 'eng', key: 'requestsPerDay', value: 5000 }))
    expect(c.format).toBe('yaml')
    expect(c.path).toBe('groups.eng.limits')
    expect(c.snippet).toBe('groups:\n  eng:\n    limits:\n      requestsPerDay: 5000\n')
    expect(c.notes[0]).toBe('raises requestsPerDay from 1000 to 5000')
    expect(c.notes[1]).toContain('requestsPerMinute, costPerDayUSD')
    expect(c.warnings).toEqual([])
  })
  it('lowers a cost limit, in USD', () => {
    const c = ok(planChange(config, { kind: 'limit', target: 'group', name: 'eng', key: 'costPerDayUSD', value: 1.25 }))
    expect(c.snippet).toBe('groups:\n  eng:\n    limits:\n      costPerDayUSD: 1.25\n')
    expect(c.notes[0]).toBe('lowers costPerDayUSD from 2.5 to 1.25')
  })
  it('sets a first limit on a group without limits, and removes one with 0', () => {
    const first = ok(planChange(golden, { kind: 'limit', target: 'group', name: 'all', key: 'tokensPerMonth', value: 1000000 }))
    expect(first.snippet).toBe('groups:\n  all:\n    limits:\n      tokensPerMonth: 1000000\n')
    expect(first.notes).toEqual(['sets a tokensPerMonth limit of 1000000 (unlimited before)'])
    const removed = ok(planChange(config, { kind: 'limit', target: 'group', name: 'eng', key: 'requestsPerMinute', value: 0 }))
    expect(removed.notes[0]).toBe('removes the requestsPerMinute limit of 60 (0 is unlimited)')
  })
  it('warns when nothing changes', () => {
    const c = ok(planChange(config, { kind: 'limit', target: 'group', name: 'eng', key: 'requestsPerDay', value: 1000 }))
    expect(c.warnings).toEqual(['nothing to change: the value is already set'])
    expect(describeLimit('requestsPerDay', 0, 0)).toBe('requestsPerDay stays unlimited (no change)')
  })
  it('refuses bad values and unknown groups', () => {
    const bad = (value: number, key = 'requestsPerDay' as const) => planChange(config, { kind: 'limit', target: 'group', name: 'eng', key, value })
    expect(bad(-1)).toEqual({ ok: false, error: 'requestsPerDay must be a number of 0 or more (0 is unlimited)' })
    expect(bad(NaN).ok).toBe(false)
    expect(bad(1.5)).toEqual({ ok: false, error: 'requestsPerDay is a whole number' })
    expect(planChange(config, { kind: 'limit', target: 'group', name: 'eng', key: 'costPerDayUSD', value: 0.0000001 })).toEqual({ ok: false, error: 'costPerDayUSD is USD with at most 6 decimals (micro-USD)' })
    expect(ok(planChange(config, { kind: 'limit', target: 'group', name: 'eng', key: 'costPerDayUSD', value: 0.000001 })).snippet).toContain('costPerDayUSD: 0.000001')
    expect(planChange(config, { kind: 'limit', target: 'group', name: 'nope', key: 'requestsPerDay', value: 5 })).toEqual({ ok: false, error: 'no group "nope" in the configuration' })
  })
  it('writes an inline user limit as that users.inline entry', () => {
    const c = ok(planChange(golden, { kind: 'limit', target: 'user', name: 'dave', key: 'requestsPerMinute', value: 30 }))
    expect(c.snippet).toBe('users:\n  inline:\n    - name: dave\n      limits:\n        requestsPerMinute: 30\n')
    expect(c.path).toBe('users.inline[name=dave].limits')
    expect(c.notes[0]).toBe('sets a requestsPerMinute limit of 30 (unlimited before)')
    expect(c.notes[1]).toContain('entry named "dave"')
  })
  it('writes a users-file user limit as JSON, its current value from usage', () => {
    const c = ok(planChange(golden, { kind: 'limit', target: 'user', name: 'carol', key: 'requestsPerDay', value: 250 }, { users: usage.users }))
    expect(c.format).toBe('json')
    expect(JSON.parse(c.snippet)).toEqual({ name: 'carol', limits: { requestsPerDay: 250 } })
    expect(c.notes[0]).toBe('raises requestsPerDay from 100 to 250')
    expect(c.notes[1]).toContain('TMPDIR/users.json')
    const cost = ok(planChange(golden, { kind: 'limit', target: 'user', name: 'carol', key: 'costPerDayUSD', value: 3 }, { users: [{ ...usage.users[2], limits: { costPerDayMicroUsd: 1500000 } }] }))
    expect(cost.notes[0]).toBe('raises costPerDayUSD from 1.5 to 3')
  })
  it('refuses a user it cannot place', () => {
    expect(planChange(golden, { kind: 'limit', target: 'user', name: 'carol', key: 'requestsPerDay', value: 5 })).toEqual({ ok: false, error: 'no user "carol" in users.inline or among the active users' })
    const noFile = { ...golden, users: { inline: [] } }
    expect(planChange(noFile, { kind: 'limit', target: 'user', name: 'carol', key: 'requestsPerDay', value: 5 }, { users: usage.users }).ok).toBe(false)
  })
})

describe('change-helper: models', () => {
  it('adds a model: the snippet carries the whole new list', () => {
    const c = ok(planChange(config, { kind: 'add-model', group: 'eng', model: 'p/m1' }))
    expect(c.snippet).toBe('groups:\n  eng:\n    models:\n      - "gpt-*"\n      - q/claude-haiku-4-5\n      - p/m1\n')
    expect(c.path).toBe('groups.eng.models')
    expect(c.warnings).toEqual([])
  })
  it('warns that a first entry restricts an unrestricted group', () => {
    const c = ok(planChange(config, { kind: 'add-model', group: 'ops', model: 'm1' }))
    expect(c.snippet).toBe('groups:\n  ops:\n    models:\n      - m1\n')
    expect(c.warnings[0]).toContain('restricts the group to "m1"')
  })
  it('warns when a glob already covers it, or the providers list shuts it out', () => {
    expect(ok(planChange(config, { kind: 'add-model', group: 'eng', model: 'p/gpt-4o' })).warnings).toEqual(['"gpt-*" already matches "p/gpt-4o": the group reaches it today'])
    expect(ok(planChange(config, { kind: 'add-model', group: 'eng', model: 'zbad/m1' })).warnings).toEqual(['groups.eng.providers does not admit "zbad": the model stays out of reach until it does'])
  })
  it('refuses a duplicate, an empty id and an unknown group', () => {
    expect(planChange(config, { kind: 'add-model', group: 'eng', model: 'gpt-*' })).toEqual({ ok: false, error: 'groups.eng.models already lists "gpt-*"' })
    expect(planChange(config, { kind: 'add-model', group: 'eng', model: '  ' }).ok).toBe(false)
    expect(planChange(config, { kind: 'add-model', group: 'eng', model: 'a b' }).ok).toBe(false)
    expect(planChange(config, { kind: 'add-model', group: 'x', model: 'm1' }).ok).toBe(false)
  })
  it('matches globs as path.Match does for * and ?', () => {
    expect(globMatches('gpt-*', 'gpt-4o')).toBe(true)
    expect(globMatches('*', 'p/m1')).toBe(false)
    expect(globMatches('p/*', 'p/m1')).toBe(true)
    expect(globMatches('m?', 'm1')).toBe(true)
    expect(globMatches('a.b', 'axb')).toBe(false)
    expect(globMatches('[ab]', 'a')).toBeUndefined()
  })
})

describe('change-helper: group cache', () => {
  it('turns a group cache on when the top-level cache is on', () => {
    const c = ok(planChange(golden, { kind: 'group-cache', group: 'all', enabled: true }))
    expect(c.snippet).toBe('groups:\n  all:\n    cache: true\n')
    expect(c.notes[0]).toBe('turns the cache on for requests whose primary group is "all" (now: inherited from cache.enabled (on))')
    expect(c.warnings).toEqual([])
  })
  it('warns that enabling it without the top-level cache is a construction error', () => {
    const off = { ...config, cache: { enabled: false, ttl: '5m', maxBodyBytes: 0 } }
    const c = ok(planChange(off, { kind: 'group-cache', group: 'eng', enabled: true }))
    expect(c.warnings[0]).toContain('construction error')
    const disable = ok(planChange(off, { kind: 'group-cache', group: 'eng', enabled: false }))
    expect(disable.snippet).toBe('groups:\n  eng:\n    cache: false\n')
    expect(disable.notes[1]).toContain('caches nothing either way')
  })
  it('warns when the group already has that setting; refuses an unknown group', () => {
    expect(ok(planChange(config, { kind: 'group-cache', group: 'ops', enabled: false })).warnings).toEqual(['nothing to change: the value is already set'])
    expect(planChange(config, { kind: 'group-cache', group: 'x', enabled: false }).ok).toBe(false)
  })
})

describe('change-helper: current limits', () => {
  it('reads a group, an inline user and a users-file user', () => {
    expect(currentLimit(config, 'group', 'eng', 'costPerDayUSD')).toBe(2.5)
    expect(currentLimit(config, 'group', 'ops', 'requestsPerDay')).toBe(0)
    expect(currentLimit(config, 'group', 'nope', 'requestsPerDay')).toBeUndefined()
    expect(currentLimit(golden, 'user', 'alice', 'requestsPerDay')).toBe(0)
    expect(currentLimit(golden, 'user', 'carol', 'requestsPerDay', { users: usage.users })).toBe(100)
    expect(currentLimit(golden, 'user', 'carol', 'requestsPerDay')).toBeUndefined()
  })
})
