import { describe, expect, it } from 'vitest'
import usage from '../fixtures/consumers-usage.json'
import { limitUsages, untilReset, windowEnd, type UsageRow } from './limit-usage'

const now = new Date('2026-11-29T22:17:30Z')
const bob = usage.users.find((u) => u.name === 'bob') as UsageRow

describe('limit-usage', () => {
  it('ends each window in UTC', () => {
    expect(windowEnd('minute', now).toISOString()).toBe('2026-11-29T22:18:00.000Z')
    expect(windowEnd('day', now).toISOString()).toBe('2026-11-30T00:00:00.000Z')
    expect(windowEnd('month', now).toISOString()).toBe('2026-12-01T00:00:00.000Z')
    expect(windowEnd('month', new Date('2026-12-31T23:59:59Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z')
  })
  it('measures each limit in its window', () => {
    const limits = {
      requestsPerMinute: 4,
      requestsPerDay: 10,
      tokensPerDay: 36,
      tokensPerMonth: 100,
      costPerDayMicroUsd: 200,
      costPerMonthMicroUsd: 1000,
    }
    const got = limitUsages(limits, bob, now)
    expect(got.map((l) => [l.name, l.window, l.used, l.limit])).toEqual([
      ['requestsPerMinute', 'minute', 2, 4],
      ['requestsPerDay', 'day', 2, 10],
      ['tokensPerDay', 'day', 18, 36],
      ['tokensPerMonth', 'month', 18, 100],
      ['costPerDayMicroUsd', 'day', 50, 200],
      ['costPerMonthMicroUsd', 'month', 50, 1000],
    ])
    expect(got[0].ratio).toBe(0.5)
    expect(got[2].ratio).toBe(0.5)
    expect(got[4].ratio).toBe(0.25)
    expect(got[0].resetsAt.toISOString()).toBe('2026-11-29T22:18:00.000Z')
    expect(got[3].resetsAt.toISOString()).toBe('2026-12-01T00:00:00.000Z')
  })
  it('reads the golden usage rows', () => {
    const spenders = usage.groups.find((g) => g.name === 'spenders') as UsageRow
    const [cost] = limitUsages(spenders.limits, spenders, now)
    expect(cost).toMatchObject({ name: 'costPerDayMicroUsd', used: 50, limit: 1500000, window: 'day' })
    const tight = usage.groups.find((g) => g.name === 'tight') as UsageRow
    expect(limitUsages(tight.limits, tight, now)[0]).toMatchObject({ name: 'requestsPerMinute', used: 2, ratio: 2 })
    const carol = usage.users.find((u) => u.name === 'carol') as UsageRow
    expect(limitUsages(carol.limits, carol, now)[0]).toMatchObject({ name: 'requestsPerDay', used: 1, ratio: 0.01 })
  })
  it('leaves out unlimited ones and keeps an unread usage unknown', () => {
    expect(limitUsages(null, bob, now)).toEqual([])
    expect(limitUsages({ requestsPerDay: 0 }, bob, now)).toEqual([])
    const [l] = limitUsages({ tokensPerDay: 10 }, null, now)
    expect(l.used).toBeNull()
    expect(l.ratio).toBeNull()
  })
  it('says how long until the reset', () => {
    expect(untilReset(windowEnd('minute', now), now)).toBe('30 s')
    expect(untilReset(windowEnd('day', now), now)).toBe('1 h 42 min')
    expect(untilReset(windowEnd('month', now), now)).toBe('1 d 1 h')
    expect(untilReset(new Date(now.getTime() - 1000), now)).toBe('0 s')
    expect(untilReset(new Date(now.getTime() + 2 * 3600e3), now)).toBe('2 h')
  })
})
