import { describe, expect, it } from 'vitest'
import catalogFixture from '../fixtures/models-catalog.json'
import overviewFixture from '../fixtures/models-overview.json'
import perfFixture from '../fixtures/models-perf.json'
import usageFixture from '../fixtures/models-usage.json'
import goldenCatalog from '../../../gateway/testdata/admin/catalog.json'
import goldenUsage from '../../../gateway/testdata/admin/usage_models_detail_month.json'
import { hasCacheFigures, joinModels, splitId, successRate, type Catalog, type JoinInput, type ModelRow, type UsageModelsAnswer } from './model-join'
import type { OverviewProvider, PerfAnswer } from './perf'

const catalog = catalogFixture as Catalog
const usage = usageFixture as UsageModelsAnswer
const perf = perfFixture as PerfAnswer
const providers = overviewFixture.providers as unknown as OverviewProvider[]

function input(over: Partial<JoinInput> = {}): JoinInput {
  return { catalog, usage, usageLimit: 100, perf, providers, ...over }
}

function row(rows: ModelRow[], id: string): ModelRow {
  const r = rows.find((x) => x.id === id)
  if (!r) throw new Error('no row ' + id)
  return r
}

describe('joinModels', () => {
  it('joins catalog, usage, latency and success rate by canonical id', () => {
    const rows = joinModels(input())
    expect(rows).toHaveLength(10)
    const m1 = row(rows, 'p/m1')
    expect(m1).toMatchObject({ provider: 'p', model: 'm1', contextWindow: 8000, inputPerMTokMicroUsd: 2_000_000, priceSource: 'override', free: false, aliases: ['fast'] })
    expect(m1.usage).toEqual({ state: 'ok', requests: 4, tokensIn: 44, tokensOut: 28, costMicroUsd: 200, r402: 0, cacheHits: 1, cacheSavedMicroUsd: 120 })
    expect(m1.latency?.p50Ms).toBe(850)
    expect(m1.success).toEqual({ state: 'ok', attempts: 4, failures: 0 })
    expect(successRate(m1.success)).toBe(1)
    // The same bare model under another provider is its own row.
    const z = row(rows, 'zbad/m1')
    expect(z.success).toEqual({ state: 'ok', attempts: 1, failures: 1 })
    expect(successRate(z.success)).toBe(0)
    expect(z.latency?.p50Ms).toBeUndefined()
  })

  it('marks free models: a free price source, a :free display id, or a free usage entry', () => {
    const rows = joinModels(input())
    expect(row(rows, 'p/gift').free).toBe(true)
    expect(row(rows, 'p/tiny:free').free).toBe(true)
    expect(row(rows, 'p/tiny:free').priceSource).toBe('unpriced')
    expect(row(rows, 'p/gpt-4o').free).toBe(false)
    expect(row(rows, 'p/m2').inputPerMTokMicroUsd).toBeNull()
  })

  it('ranks by requests, then id; a model absent from a short answer has zero usage', () => {
    const rows = joinModels(input())
    expect(rows.slice(0, 4).map((r) => r.id)).toEqual(['p/m1', 'p/m2', 'p/tiny:free', 'zbad/m1'])
    expect(row(rows, 'd/disc-1').usage).toEqual({ state: 'ok', requests: 0, tokensIn: 0, tokensOut: 0, costMicroUsd: 0, r402: 0, cacheHits: 0, cacheSavedMicroUsd: 0 })
    // Without the cache figures in the answer, none are made up.
    const noCache = { ...usage, models: usage.models.map(({ cacheHits: _h, cacheSavedMicroUsd: _s, ...m }) => m) }
    expect(row(joinModels(input({ usage: noCache })), 'd/disc-1').usage).toEqual({ state: 'ok', requests: 0, tokensIn: 0, tokensOut: 0, costMicroUsd: 0, r402: 0 })
    expect(row(rows, 'd/disc-1').latency).toBeNull()
    expect(hasCacheFigures(rows)).toBe(true)
  })

  it('never draws a failed usage read as zero', () => {
    const rows = joinModels(input({ usage: null }))
    expect(rows.every((r) => r.usage.state === 'unavailable')).toBe(true)
    expect(hasCacheFigures(rows)).toBe(false)
  })

  it('calls a model absent from an answer cut at its limit unranked, not zero', () => {
    const rows = joinModels(input({ usageLimit: 4 }))
    expect(row(rows, 'p/m1').usage.state).toBe('ok')
    expect(row(rows, 'd/disc-1').usage).toEqual({ state: 'unranked' })
  })

  it('says the success rate is unavailable when overview could not read its counters', () => {
    const down = providers.map(({ modelRates: _drop, attemptsDay: _a, failuresDay: _f, ...p }) => p)
    const rows = joinModels(input({ providers: down }))
    expect(row(rows, 'p/m1').success).toEqual({ state: 'unavailable' })
    expect(successRate(row(rows, 'p/m1').success)).toBeNull()
    expect(joinModels(input({ providers: null }))[0].success).toBeNull()
  })

  it('keeps a served model the catalog read does not list yet', () => {
    const extra: UsageModelsAnswer = { ...usage, models: [...usage.models, { id: 'router/openai/gpt-5', value: 9, requests: 9, tokensIn: 1, tokensOut: 1, costMicroUsd: 5, free: false, priceSource: 'litellm', r402: 0 }] }
    const rows = joinModels(input({ usage: extra }))
    expect(rows[0]).toMatchObject({ id: 'router/openai/gpt-5', provider: 'router', model: 'openai/gpt-5', inCatalog: false, priceSource: 'litellm' })
  })

  it('rows without a catalog come from usage alone', () => {
    const rows = joinModels(input({ catalog: null }))
    expect(rows.map((r) => r.id)).toEqual(['p/m1', 'p/m2', 'p/tiny:free', 'zbad/m1'])
  })

  it('reads the gateway golden answers', () => {
    const rows = joinModels({ catalog: goldenCatalog as Catalog, usage: goldenUsage as UsageModelsAnswer, usageLimit: 100, perf: null, providers: null })
    // The golden usage comes from another configuration: its ids are
    // served models the catalog golden does not list.
    expect(rows).toHaveLength(10 + 5)
    expect(row(rows, 'mock/m3').free).toBe(true)
    expect(row(rows, 'alt/z9').usage).toMatchObject({ state: 'ok', r402: 1 })
    expect(row(rows, 'q/claude-haiku-4-5')).toMatchObject({ contextWindow: 200000, outputPerMTokMicroUsd: 5_000_000, priceSource: 'builtin' })
  })
})

describe('splitId', () => {
  it('splits at the first slash', () => {
    expect(splitId('p/m1')).toEqual({ provider: 'p', model: 'm1' })
    expect(splitId('or/openai/gpt-4o')).toEqual({ provider: 'or', model: 'openai/gpt-4o' })
    expect(splitId('bare')).toEqual({ provider: '', model: 'bare' })
  })
})
