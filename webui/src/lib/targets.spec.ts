import { describe, expect, it } from 'vitest'
import fixture from '../fixtures/targets-answer.json'
import golden from '../../../gateway/testdata/admin/targets.json'
import { accessLabel, counter, observed, reaches, type TargetsAnswer } from './targets'

const answer = fixture as TargetsAnswer

describe('targets', () => {
  it('words access: null every group, [] no group', () => {
    expect(accessLabel(null)).toBe('every group')
    expect(accessLabel([])).toBe('no group')
    expect(accessLabel(['all', 'ops'])).toBe('all, ops')
    const [docs, files, legacy] = answer.mcpServers
    expect([reaches(docs, 'x'), reaches(files, 'all'), reaches(files, 'x'), reaches(legacy, 'all')]).toEqual([true, true, false, false])
  })
  it('knows a target never observed', () => {
    expect(answer.agents.map((t) => observed(t.health))).toEqual([true, false])
    expect((golden as TargetsAnswer).mcpServers.map((t) => observed(t.health))).toEqual([true, true, false])
  })
  it('reads counters, unavailable (never zero) when the read failed', () => {
    const docs = answer.mcpServers[0]
    expect(counter(docs, answer.countersUnavailable, 'requestsPerDay')).toBe(3)
    expect(counter(answer.agents[0], false, 'requestsPerMonth')).toBe(2)
    expect(counter(docs, true, 'requestsPerDay')).toBeNull()
    const { counters: _gone, ...bare } = docs
    expect(counter(bare, false, 'requestsPerDay')).toBeNull()
  })
})
