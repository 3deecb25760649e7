import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import ConfigPage from './ConfigPage.vue'
import { useDashboardStore } from '../stores/dashboard'
import golden from '../fixtures/config-config.json'
import usage from '../fixtures/home-usage.json'

describe('ConfigPage', () => {
  beforeEach(() => {
    setActivePinia(createPinia())
    vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify(golden), { status: 200 })))
  })
  afterEach(() => vi.unstubAllGlobals())

  it('renders the YAML, warnings and features', async () => {
    const w = mount(ConfigPage)
    await flushPromises()
    const yaml = w.get('[data-test="config-yaml"]').text()
    expect(yaml).toContain('apiKey: "[redacted]"')
    expect(yaml).toContain('apiKey: "env:LLMGW_ADMIN_CONFIG_TEST_KEY"')
    expect(w.get('[data-test="config-warnings"]').text()).toContain('cache.ttl')
    expect(w.findAll('[data-test="config-feature"]')).toHaveLength(5)
  })

  it('the change helper builds a snippet from the intent', async () => {
    useDashboardStore().usage = usage
    const w = mount(ConfigPage)
    await flushPromises()
    expect(w.find('[data-test="change-helper"]').exists()).toBe(true)
    await w.get('[data-test="change-value"]').setValue('5000')
    expect(w.get('[data-test="change-snippet"]').text()).toBe('groups:\n  all:\n    limits:\n      requestsPerDay: 5000')
    await w.get('[data-test="change-target"]').setValue('user')
    await w.get('[data-test="change-name"]').setValue('carol')
    // The value starts at carol's current limit (from usage): no change yet.
    expect((w.get('[data-test="change-value"]').element as HTMLInputElement).value).toBe('100')
    expect(w.get('[data-test="change-warnings"]').text()).toContain('nothing to change')
    await w.get('[data-test="change-value"]').setValue('150')
    expect(JSON.parse(w.get('[data-test="change-snippet"]').text())).toEqual({ name: 'carol', limits: { requestsPerDay: 150 } })
    await w.get('[data-test="change-intent"]').setValue('group-cache')
    await w.get('[data-test="change-enabled"]').setValue('false')
    expect(w.get('[data-test="change-snippet"]').text()).toBe('groups:\n  all:\n    cache: false')
    await w.get('[data-test="change-intent"]').setValue('add-model')
    await w.get('[data-test="change-model"]').setValue('p/m1')
    expect(w.get('[data-test="change-snippet"]').text()).toBe('groups:\n  all:\n    models:\n      - p/m1')
    expect(w.get('[data-test="change-warnings"]').text()).toContain('restricts the group')
    await w.get('[data-test="change-intent"]').setValue('limit')
    await w.get('[data-test="change-target"]').setValue('group')
    await w.get('[data-test="change-value"]').setValue('-3')
    expect(w.get('[data-test="change-error"]').text()).toContain('0 or more')
  })
})
