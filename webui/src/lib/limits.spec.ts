import { describe, expect, it } from 'vitest'
import { budgetUses, limitDefs, scopeRow, tightestBudgets, untilText, windowReset, type UsageAnswer } from './limits'
import usageFixture from '../fixtures/home-usage.json'

const usage = usageFixture as unknown as UsageAnswer
const at = (iso: string) => Date.parse(iso)

describe('windowReset', () => {
  it('ends a minute at the next whole UTC minute', () => {
    expect(windowReset('minute', at('2026-12-01T12:34:56.789Z'))).toBe(at('2026-12-01T12:35:00Z'))
    expect(windowReset('minute', at('2026-12-01T12:34:00Z'))).toBe(at('2026-12-01T12:35:00Z'))
    expect(windowReset('minute', at('2026-12-31T23:59:30Z'))).toBe(at('2027-01-01T00:00:00Z'))
  })
  it('ends a day at the next UTC midnight', () => {
    expect(windowReset('day', at('2026-12-01T12:00:00Z'))).toBe(at('2026-12-02T00:00:00Z'))
    expect(windowReset('day', at('2026-12-01T00:00:00Z'))).toBe(at('2026-12-02T00:00:00Z'))
    expect(windowReset('day', at('2026-12-31T23:59:59Z'))).toBe(at('2027-01-01T00:00:00Z'))
    expect(windowReset('day', at('2028-02-28T08:00:00Z'))).toBe(at('2028-02-29T00:00:00Z'))
  })
  it('ends a month on the first of the next UTC month', () => {
    expect(windowReset('month', at('2026-12-15T10:00:00Z'))).toBe(at('2027-01-01T00:00:00Z'))
    expect(windowReset('month', at('2026-01-31T23:00:00Z'))).toBe(at('2026-02-01T00:00:00Z'))
    expect(windowReset('month', at('2026-03-01T00:00:00Z'))).toBe(at('2026-04-01T00:00:00Z'))
  })
  it('uses UTC, not the local zone (an offset time late in the day)', () => {
    // 23:30 at UTC-5 is 04:30 UTC the next day.
    expect(windowReset('day', at('2026-12-01T23:30:00-05:00'))).toBe(at('2026-12-03T00:00:00Z'))
  })
})

describe('untilText', () => {
  it('shows the two largest units', () => {
    expect(untilText(0)).toBe('0 s')
    expect(untilText(45_000)).toBe('45 s')
    expect(untilText(44_100)).toBe('45 s')
    expect(untilText(60_000)).toBe('1 min')
    expect(untilText(725_000)).toBe('12 min 5 s')
    expect(untilText(3 * 3600_000 + 20 * 60_000)).toBe('3 h 20 min')
    expect(untilText(7200_000)).toBe('2 h')
    expect(untilText(9 * 86400_000 + 4 * 3600_000 + 59_000)).toBe('9 d 4 h')
    expect(untilText(-5)).toBe('0 s')
  })
})

describe('budgets', () => {
  const now = at('2026-12-01T12:00:30Z')
  it('maps every limit to its window and the row figure it bounds', () => {
    const row = { ...usage.users[0], limits: { requestsPerMinute: 10, requestsPerDay: 8, tokensPerDay: 100, tokensPerMonth: 540, costPerDayMicroUsd: 1000, costPerMonthMicroUsd: 200 } }
    const uses = budgetUses(row, 'user', now)
    expect(uses.map((u) => [u.limit, u.window, u.used, u.max])).toEqual([
      ['requestsPerMinute', 'minute', 4, 10],
      ['requestsPerDay', 'day', 4, 8],
      ['tokensPerDay', 'day', 54, 100],
      ['tokensPerMonth', 'month', 54, 540],
      ['costPerDayMicroUsd', 'day', 100, 1000],
      ['costPerMonthMicroUsd', 'month', 100, 200],
    ])
    expect(uses[0].resetsAt).toBe(at('2026-12-01T12:01:00Z'))
    expect(uses[5].ratio).toBe(0.5)
    expect(Object.keys(limitDefs)).toHaveLength(6)
  })
  it('leaves out a scope without limits and zero (unlimited) limits', () => {
    expect(budgetUses(usage.users[0], 'user', now)).toEqual([])
    expect(budgetUses({ ...usage.users[0], limits: { requestsPerDay: 0 } }, 'user', now)).toEqual([])
  })
  it('ranks every scope by ratio for the total scope (the golden: tight is over its minute limit)', () => {
    const top = tightestBudgets(usage, { kind: 'total' }, now)
    expect(top.map((b) => [b.kind, b.scope, b.limit, b.used, b.max])).toEqual([
      ['group', 'tight', 'requestsPerMinute', 2, 1],
      ['user', 'carol', 'requestsPerDay', 1, 100],
      ['group', 'spenders', 'costPerDayMicroUsd', 50, 1500000],
    ])
    expect(top[0].ratio).toBe(2)
    expect(tightestBudgets(usage, { kind: 'total' }, now, 1)).toHaveLength(1)
  })
  it('narrows to the scoped user or group', () => {
    expect(tightestBudgets(usage, { kind: 'user', id: 'carol' }, now).map((b) => b.scope)).toEqual(['carol'])
    expect(tightestBudgets(usage, { kind: 'group', id: 'spenders' }, now).map((b) => b.limit)).toEqual(['costPerDayMicroUsd'])
    expect(tightestBudgets(usage, { kind: 'user', id: 'alice' }, now)).toEqual([])
  })
  it('breaks ratio ties by the sooner reset', () => {
    const u: UsageAnswer = {
      ...usage,
      users: [{ ...usage.users[0], name: 'x', limits: { requestsPerDay: 8, requestsPerMinute: 8 } }],
      groups: [],
    }
    expect(tightestBudgets(u, { kind: 'total' }, now).map((b) => b.limit)).toEqual(['requestsPerMinute', 'requestsPerDay'])
  })
})

describe('scopeRow', () => {
  it('answers the total, a user or a group row', () => {
    expect(scopeRow(usage, { kind: 'total' })?.requestsPerDay).toBe(7)
    expect(scopeRow(usage, { kind: 'user', id: 'bob' })?.rejectionsPerDay).toBe(1)
    expect(scopeRow(usage, { kind: 'group', id: 'spenders' })?.costPerDayMicroUsd).toBe(50)
    expect(scopeRow(usage, { kind: 'user', id: 'gone' })).toBeUndefined()
  })
})
