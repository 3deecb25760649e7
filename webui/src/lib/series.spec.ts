import { describe, expect, it } from 'vitest'
import answer from '../fixtures/spend-series-req-hour.json'
import { ApiError } from './api'
import {
  bucketLabel,
  cacheWindow,
  change,
  choiceById,
  failureText,
  hasPrevious,
  modelWindow,
  pointsOf,
  retention,
  seriesParams,
  signedPercent,
  spanChoices,
  sum,
  windowText,
  type SeriesAnswer,
} from './series'

describe('series', () => {
  it('offers spans within each window retention', () => {
    for (const c of spanChoices) expect(c.span).toBeLessThanOrEqual(retention[c.unit])
    expect(spanChoices.map((c) => c.id)).toEqual(['hour-24', 'hour-48', 'day-7', 'day-14', 'day-30', 'month-12'])
    expect(choiceById('day-14')?.span).toBe(14)
  })
  it('compares with the previous period only when it is still kept', () => {
    const kept = spanChoices.filter(hasPrevious).map((c) => c.id)
    expect(kept).toEqual(['hour-24', 'day-7', 'day-14'])
  })
  it('asks for the span and the one before it (offset = span)', () => {
    const w = { unit: 'day' as const, span: 7 }
    expect(seriesParams(['total'], 'cost', w)).toEqual({ scope: ['total'], metric: 'cost', window: 'day', span: 7, offset: 0 })
    expect(seriesParams(['group:a'], 'tokin', w, true)).toMatchObject({ scope: ['group:a'], span: 7, offset: 7 })
  })
  it('reads one scope of a series answer', () => {
    const a = answer as SeriesAnswer
    expect(pointsOf(a, 'user:alice')).toEqual([0, 0, 2])
    expect(sum(pointsOf(a, 'total'))).toBe(4)
    expect(pointsOf(a, 'user:nobody')).toBeNull()
    expect(sum(null)).toBeNull()
    expect(pointsOf(null, 'total')).toBeNull()
  })
  it('computes the period-over-period change', () => {
    expect(change(150, 100)).toBeCloseTo(0.5)
    expect(change(50, 100)).toBeCloseTo(-0.5)
    expect(change(0, 0)).toBe(0)
    expect(change(5, 0)).toBeNull()
    expect(change(null, 3)).toBeNull()
    expect(change(3, null)).toBeNull()
    expect(signedPercent(0.5)).toBe('+50%')
    expect(signedPercent(-0.125)).toBe('-12.5%')
    expect(signedPercent(0)).toBe('0%')
    expect(signedPercent(null)).toBe('—')
  })
  it('labels buckets of each window', () => {
    expect(bucketLabel('2026112920')).toBe('11-29 20:00')
    expect(bucketLabel('20261129')).toBe('2026-11-29')
    expect(bucketLabel('202611')).toBe('2026-11')
  })
  it('maps a span onto the windows the per-model and cache counters keep', () => {
    expect(modelWindow({ unit: 'hour', span: 24 })).toEqual({ unit: 'day', span: 2 })
    expect(modelWindow({ unit: 'hour', span: 48 })).toEqual({ unit: 'day', span: 3 })
    expect(modelWindow({ unit: 'month', span: 12 })).toEqual({ unit: 'month', span: 12 })
    expect(cacheWindow({ unit: 'month', span: 12 })).toEqual({ unit: 'day', span: 30 })
    expect(cacheWindow({ unit: 'hour', span: 48 })).toEqual({ unit: 'hour', span: 48 })
    expect(windowText({ unit: 'day', span: 7 })).toBe('the last 7 UTC days')
  })
  it('describes a failed read without a zero', () => {
    expect(failureText(new ApiError(503, 'store_unavailable', 'down'))).toMatch(/^unavailable/)
    const big = new ApiError(400, 'too_many_keys', 'this read would touch 20000 counter keys')
    expect(failureText(big)).toBe('this read would touch 20000 counter keys — choose a smaller span.')
    const gateway = 'this read would touch 20000 counter keys, more than adminMaxKeysPerRequest (10000); narrow the span or the scopes'
    expect(failureText(new ApiError(400, 'too_many_keys', gateway))).toBe(gateway)
    expect(failureText(new ApiError(404, 'not_found', 'no such group'))).toBe('no such group')
  })
})
