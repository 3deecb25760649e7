import { flushPromises, mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import consumersAnswer from '../fixtures/consumers-consumers.json'
import usage from '../fixtures/consumers-usage.json'
import { ApiError } from '../lib/api'
import { useAuthStore } from '../stores/auth'
import { useDashboardStore } from '../stores/dashboard'
import ConsumersPage from './ConsumersPage.vue'

describe('Consumers page', () => {
  beforeEach(() => {
    sessionStorage.clear()
    setActivePinia(createPinia())
    useAuthStore().login('sk-admin')
    vi.stubGlobal('fetch', async () => new Response(JSON.stringify(consumersAnswer)))
  })
  afterEach(() => vi.unstubAllGlobals())

  it('lists users, groups, their limits and the access matrix', async () => {
    useDashboardStore().usage = usage
    const page = mount(ConsumersPage)
    await flushPromises()
    expect(page.findAll('[data-test="consumer-user"]')).toHaveLength(5)
    expect(page.findAll('[data-test="consumer-group"]')).toHaveLength(4)
    const limits = page.findAll('[data-test="limit-usage"]')
    expect(limits.map((l) => l.attributes('data-limit'))).toEqual(['requestsPerDay', 'costPerDayMicroUsd', 'requestsPerMinute'])
    const carol = page.find('[data-test="consumer-user"][data-name="carol"] [data-test="limit-usage"]')
    expect(carol.find('[data-test="limit-used"]').text()).toBe('1')
    expect(carol.find('[data-test="limit-percent"]').text()).toBe('(1%)')
    expect(carol.find('[data-test="limit-reset"]').text()).toMatch(/^resets in /)
    const tight = page.find('[data-test="consumer-group"][data-name="tight"] [data-test="limit-percent"]')
    expect(tight.text()).toBe('(200%)')
    const cell = page.find('[data-test="matrix-row"][data-name="tight"] [data-test="matrix-cell"][data-provider="p"]')
    expect(cell.text()).toBe('1 / 6')
    const blocked = page.find('[data-test="matrix-row"][data-name="tight"] [data-test="matrix-cell"][data-provider="q"]')
    expect(blocked.text()).toBe('no access')
    expect(page.find('[data-test="consumers-matrix"]').exists()).toBe(true)
  })

  it('filters the directory', async () => {
    useDashboardStore().usage = usage
    const page = mount(ConsumersPage)
    await flushPromises()
    await page.find('[data-test="consumers-filter"]').setValue('tight')
    expect(page.findAll('[data-test="consumer-user"]').map((r) => r.attributes('data-name'))).toEqual(['bob'])
    expect(page.findAll('[data-test="consumer-group"]').map((r) => r.attributes('data-name'))).toEqual(['tight'])
  })

  it('shows limits without usage when the store is down', async () => {
    const dash = useDashboardStore()
    dash.error = new ApiError(503, 'store_unavailable', 'down')
    dash.overview = { groups: [{ name: 'tight', members: 1, limits: { requestsPerMinute: 1 } }] }
    const page = mount(ConsumersPage)
    await flushPromises()
    expect(page.find('[data-test="consumers-usage-unavailable"]').exists()).toBe(true)
    const tight = page.find('[data-test="consumer-group"][data-name="tight"] [data-test="limit-usage"]')
    expect(tight.find('[data-test="limit-used"]').text()).toBe('unavailable')
    expect(page.find('[data-test="consumer-user"][data-name="carol"] [data-test="limits-unknown"]').exists()).toBe(true)
  })
})
