import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { beforeEach, describe, expect, it } from 'vitest'
import targets from '../fixtures/targets-answer.json'
import { useDashboardStore } from '../stores/dashboard'
import { useScopeStore } from '../stores/scope'
import TargetsPage from './TargetsPage.vue'

const now = Date.parse('2026-12-01T12:00:00Z')

function page(answer: unknown, updated = now) {
  const pinia = createPinia()
  setActivePinia(pinia)
  const dash = useDashboardStore()
  dash.targets = answer
  dash.updated = updated
  return mount(TargetsPage, { global: { plugins: [pinia] } })
}

describe('TargetsPage', () => {
  beforeEach(() => setActivePinia(createPinia()))

  it('lists MCP servers and agents with access, counters and health', () => {
    const w = page(targets)
    expect(w.findAll('[data-test="target-mcp"]').map((r) => r.attributes('data-id'))).toEqual(['docs-search', 'files', 'legacy'])
    expect(w.findAll('[data-test="target-agent"]').map((r) => r.attributes('data-id'))).toEqual(['helper', 'planner'])
    const docs = w.get('[data-test="target-mcp"][data-id="docs-search"]')
    expect(docs.get('[data-test="target-access"]').text()).toBe('every group')
    expect(docs.get('[data-test="target-rpd"]').text()).toBe('3')
    expect(docs.get('[data-test="target-health"]').text()).toContain('healthy')
    expect(docs.get('[data-test="target-health"]').text()).toContain('checked 30 s ago (passive) · 12 ms')
    const legacy = w.get('[data-test="target-mcp"][data-id="legacy"]')
    expect(legacy.get('[data-test="target-access"]').text()).toBe('no group')
    expect(legacy.get('[data-test="target-health"]').text()).toContain('never observed')
    const helper = w.get('[data-test="target-agent"][data-id="helper"]')
    expect(helper.get('[data-test="target-health"]').attributes('data-state')).toBe('unhealthy')
    expect(helper.get('[data-test="target-last-error"]').text()).toBe('timeout after 5s')
    expect(helper.text()).toContain('2 failed in a row')
  })

  it('shows counters as unavailable, never zero, when their read failed', () => {
    const strip = (list: typeof targets.mcpServers) => list.map(({ counters: _c, ...t }) => t)
    const w = page({ mcpServers: strip(targets.mcpServers), agents: strip(targets.agents), countersUnavailable: true })
    expect(w.find('[data-test="targets-counters-unavailable"]').exists()).toBe(true)
    const rpd = w.findAll('[data-test="target-rpd"]').map((c) => c.text())
    expect(rpd).toEqual(['unavailable', 'unavailable', 'unavailable', 'unavailable', 'unavailable'])
    expect(w.get('[data-test="target-mcp"][data-id="files"] [data-test="target-access"]').text()).toBe('all')
  })

  it('narrows to the targets a scoped group reaches', async () => {
    const w = page(targets)
    useScopeStore().set({ kind: 'group', id: 'all' })
    await w.vm.$nextTick()
    expect(w.findAll('[data-test="target-mcp"]').map((r) => r.attributes('data-id'))).toEqual(['docs-search', 'files'])
    expect(w.findAll('[data-test="target-agent"]').map((r) => r.attributes('data-id'))).toEqual(['helper'])
    expect(w.find('[data-test="targets-scope-note"]').exists()).toBe(true)
  })

  it('says the targets are unavailable when the read failed, and loading before the first poll', () => {
    expect(page(null).find('[data-test="targets-unavailable"]').exists()).toBe(true)
    expect(page(null, 0).find('[data-test="targets-loading"]').exists()).toBe(true)
  })
})
