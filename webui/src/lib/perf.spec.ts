import { describe, expect, it } from 'vitest'
import overviewFixture from '../fixtures/models-overview.json'
import providersFixture from '../fixtures/reliability-providers.json'
import seriesFixture from '../fixtures/reliability-series.json'
import goldenPercentiles from '../../../gateway/testdata/admin/performance_percentiles.json'
import {
  bucketLabel,
  busiest,
  clampSpan,
  failureRate,
  isZeroTime,
  latencyText,
  nextProbe,
  overThreshold,
  reliabilityRows,
  seriesChart,
  until,
  type OverviewProvider,
  type PerfAnswer,
} from './perf'

const providers = overviewFixture.providers as unknown as OverviewProvider[]
const now = Date.parse('2026-12-01T12:00:00Z')

describe('failure rates', () => {
  it('is no rate without attempts, never 0%', () => {
    expect(failureRate({ attempts: 0, failures: 0 })).toBeNull()
    expect(failureRate({ attempts: 8, failures: 2 })).toBe(0.25)
    expect(overThreshold(null, 0)).toBe(false)
    expect(overThreshold(0.05, 0.05)).toBe(false)
    expect(overThreshold(0.06, 0.05)).toBe(true)
  })
  it('joins performance rows with the discovery breaker state', () => {
    const rows = reliabilityRows(providersFixture as PerfAnswer, providers, 0.05)
    expect(rows.map((r) => [r.id, r.rate, r.over, r.healthState, r.discoveryEnabled])).toEqual([
      ['d', null, false, 'closed', true],
      ['dfail', null, false, 'open', true],
      ['p', 0.025, false, 'closed', false],
      ['q', 1 / 7, true, 'closed', false],
      ['zbad', 1, true, 'closed', false],
    ])
    expect(reliabilityRows(providersFixture as PerfAnswer, null, 0.05)[0].healthState).toBeNull()
    expect(reliabilityRows(null, providers, 0.05)).toEqual([])
  })
  it('charts the busiest provider by default', () => {
    expect(busiest((providersFixture as PerfAnswer).rows)).toBe('p')
    expect(busiest([])).toBe('')
  })
  it('reads the gateway golden answer', () => {
    const rows = reliabilityRows(goldenPercentiles as PerfAnswer, null, 0.1)
    expect(rows[0]).toMatchObject({ id: 'a', timeouts: 1, over: true, overflow: true })
    expect(latencyText(rows[0].p95Ms, rows[0].overflow)).toBe('> 600 s')
    expect(latencyText(rows[0].p50Ms, rows[0].overflow)).toBe('875 ms')
    expect(latencyText(rows[1].p50Ms)).toBe('—')
  })
})

describe('spans and buckets', () => {
  it('clamps a span to the window retention', () => {
    expect(clampSpan('hour', 100)).toBe(48)
    expect(clampSpan('day', 48)).toBe(35)
    expect(clampSpan('day', 0)).toBe(1)
    expect(clampSpan('hour', NaN)).toBe(1)
  })
  it('labels hour and day buckets', () => {
    expect(bucketLabel('2026112921')).toBe('11-29 21h')
    expect(bucketLabel('20261129')).toBe('11-29')
  })
  it('charts attempts, failures and timeouts per bucket', () => {
    const c = seriesChart(seriesFixture as PerfAnswer)
    expect(c.type).toBe('bar')
    expect(c.data.labels).toEqual(['11-29 21h', '11-29 22h'])
    expect(c.data.datasets.map((d) => [d.label, d.data])).toEqual([
      ['attempts', [1, 3]],
      ['failures', [0, 1]],
      ['timeouts', [0, 0]],
    ])
  })
})

describe('discovery breaker', () => {
  const byName = new Map(providers.map((p) => [p.name, p]))
  it('says when an open breaker probes next', () => {
    expect(nextProbe(byName.get('dfail')!, now)).toBe('next probe in 4 min')
    expect(nextProbe(byName.get('dfail')!, Date.parse('2026-12-01T12:05:00Z'))).toBe('next probe due')
    expect(nextProbe(byName.get('d')!, now)).toBe('on the refresh interval')
    expect(nextProbe(byName.get('p')!, now)).toBe('discovery off')
    expect(nextProbe({ ...byName.get('d')!, healthState: 'half-open' }, now)).toBe('probing now')
  })
  it('formats future times and knows the zero time', () => {
    expect(until('2026-12-01T12:00:30Z', now)).toBe('in 30 s')
    expect(until('2026-12-01T15:00:00Z', now)).toBe('in 3 h')
    expect(until('2026-12-03T12:00:00Z', now)).toBe('in 2 d')
    expect(until('garbage', now)).toBe('—')
    expect(isZeroTime('0001-01-01T00:00:00Z')).toBe(true)
    expect(isZeroTime('')).toBe(true)
    expect(isZeroTime('2026-12-01T11:50:00Z')).toBe(false)
  })
})
