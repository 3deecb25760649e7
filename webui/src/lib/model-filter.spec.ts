import { describe, expect, it } from 'vitest'
import { filterModels, matches, providersOf, terms } from './model-filter'

const rows = [
  { id: 'p/gpt-4o', provider: 'p', aliases: [] },
  { id: 'p/m1', provider: 'p', aliases: ['fast'] },
  { id: 'zbad/m1', provider: 'zbad', aliases: ['fast', 'multi'] },
  { id: 'q/claude-haiku-4-5', provider: 'q', aliases: [] },
]

describe('model filter', () => {
  it('keeps every row without a query or provider', () => {
    expect(filterModels(rows, { q: '  ', provider: '' })).toBe(rows)
  })
  it('matches every word, case-insensitively, in the id or an alias', () => {
    expect(filterModels(rows, { q: 'M1', provider: '' }).map((r) => r.id)).toEqual(['p/m1', 'zbad/m1'])
    expect(filterModels(rows, { q: 'fast zbad', provider: '' }).map((r) => r.id)).toEqual(['zbad/m1'])
    expect(filterModels(rows, { q: 'multi', provider: '' }).map((r) => r.id)).toEqual(['zbad/m1'])
    expect(filterModels(rows, { q: 'nothing', provider: '' })).toEqual([])
  })
  it('narrows to one provider, exactly', () => {
    expect(filterModels(rows, { q: '', provider: 'p' }).map((r) => r.id)).toEqual(['p/gpt-4o', 'p/m1'])
    expect(filterModels(rows, { q: 'fast', provider: 'p' }).map((r) => r.id)).toEqual(['p/m1'])
    expect(matches(rows[0], { q: '', provider: 'pp' })).toBe(false)
  })
  it('lists the providers once, sorted', () => {
    expect(providersOf([...rows].reverse())).toEqual(['p', 'q', 'zbad'])
    expect(terms(' A  b ')).toEqual(['a', 'b'])
  })
})
