import { describe, expect, it } from 'vitest'
import { ago, count, micros, ms, percent } from './format'

describe('format', () => {
  it('formats micro-USD', () => {
    expect(micros(1_230_000)).toBe('$1.23')
    expect(micros(0)).toBe('$0')
    expect(micros(400)).toBe('$0.00040')
    expect(micros(null)).toBe('—')
  })
  it('formats counts, ratios and durations', () => {
    expect(count(1234)).toBe('1,234')
    expect(count(1_200_000)).toBe('1.2M')
    expect(percent(0.256)).toBe('25.6%')
    expect(ms(850)).toBe('850 ms')
    expect(ms(2500)).toBe('2.5 s')
  })
  it('formats relative times', () => {
    const now = Date.parse('2026-12-01T12:00:00Z')
    expect(ago(0, now)).toBe('never')
    expect(ago(now / 1000 - 180, now)).toBe('3 min ago')
    expect(ago('2026-12-01T10:00:00Z', now)).toBe('2 h ago')
  })
})
