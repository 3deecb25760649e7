import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import EventsPage from './EventsPage.vue'
import { useScopeStore } from '../stores/scope'
import golden from '../fixtures/events-events.json'
import mixed from '../fixtures/events-mixed.json'

describe('EventsPage', () => {
  let answer: unknown
  let calls = 0
  beforeEach(() => {
    setActivePinia(createPinia())
    calls = 0
    vi.useFakeTimers()
    vi.stubGlobal('fetch', vi.fn(async () => (calls++, new Response(JSON.stringify(answer), { status: 200 }))))
  })
  afterEach(() => {
    vi.useRealTimers()
    vi.unstubAllGlobals()
  })

  it('shows the golden feed with its source, no degraded notice', async () => {
    answer = golden
    const w = mount(EventsPage)
    await flushPromises()
    const rows = w.findAll('[data-test="events-row"]')
    expect(rows).toHaveLength(1)
    expect(rows[0].attributes('data-kind')).toBe('rate_limit')
    expect(rows[0].get('[data-test="events-time"]').attributes('title')).toBe('2026-12-01T11:59:00Z')
    expect(w.get('[data-test="events-source"]').text()).toContain('this replica only')
    expect(w.find('[data-test="events-degraded"]').exists()).toBe(false)
    w.unmount()
  })

  it('filters by kind and provider, shows the degraded notice, polls until unmounted', async () => {
    answer = mixed
    const w = mount(EventsPage)
    await flushPromises()
    expect(w.get('[data-test="events-degraded"]').text()).toContain('Degraded')
    expect(w.findAll('[data-test="events-row"]').map((r) => r.attributes('data-kind'))).toEqual(['failover', 'upstream', 'capacity', 'rate_limit', 'timeout'])
    await w.get('[data-test="events-filter-kind"]').setValue('upstream')
    expect(w.findAll('[data-test="events-row"]')).toHaveLength(1)
    await w.get('[data-test="events-filter-kind"]').setValue('')
    await w.get('[data-test="events-filter-provider"]').setValue('zbad')
    expect(w.findAll('[data-test="events-row"]').map((r) => r.attributes('data-kind'))).toEqual(['timeout'])
    await w.get('[data-test="events-filter-provider"]').setValue('')
    await w.get('[data-test="events-filter-user"]').setValue('bob')
    expect(w.findAll('[data-test="events-row"]')).toHaveLength(2)
    await vi.advanceTimersByTimeAsync(5000)
    expect(calls).toBe(2)
    w.unmount()
    await vi.advanceTimersByTimeAsync(15000)
    expect(calls).toBe(2)
  })

  it('narrows to the scope', async () => {
    answer = mixed
    useScopeStore().set({ kind: 'group', id: 'tight' })
    const w = mount(EventsPage)
    await flushPromises()
    expect(w.findAll('[data-test="events-row"]')).toHaveLength(2)
    expect(w.get('[data-test="events-count"]').text()).toContain('group tight')
    w.unmount()
  })
})
