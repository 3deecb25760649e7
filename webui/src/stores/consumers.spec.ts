import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import consumersAnswer from '../fixtures/consumers-consumers.json'
import usage from '../fixtures/consumers-usage.json'
import { ApiError } from '../lib/api'
import { useAuthStore } from './auth'
import { matches, matrixProviders, useConsumersStore, type ConsumerGroup } from './consumers'
import { useDashboardStore } from './dashboard'

function fakeGateway(status: number, body: unknown): string[] {
  const calls: string[] = []
  vi.stubGlobal('fetch', async (url: string) => {
    calls.push(url)
    return new Response(JSON.stringify(body), { status })
  })
  return calls
}

describe('consumers store', () => {
  beforeEach(() => {
    sessionStorage.clear()
    setActivePinia(createPinia())
    useAuthStore().login('sk-admin')
  })
  afterEach(() => vi.unstubAllGlobals())

  it('joins users and groups with their usage rows', async () => {
    const calls = fakeGateway(200, consumersAnswer)
    useDashboardStore().usage = usage
    const c = useConsumersStore()
    await c.load()
    expect(calls).toEqual(['/admin/api/consumers'])
    expect(c.users.map((u) => u.item.name)).toEqual(['alice', 'bob', 'carol', 'dave', 'erin'])
    const carol = c.users.find((u) => u.item.name === 'carol')!
    expect(carol.item.groups).toEqual(['spenders', 'all'])
    expect(carol.item.providers).toEqual(['q'])
    expect(carol.limits).toEqual({ requestsPerDay: 100 })
    expect(carol.usage?.requestsPerDay).toBe(1)
    const tight = c.groups.find((g) => g.item.name === 'tight')!
    expect(tight.limits).toEqual({ requestsPerMinute: 1 })
    expect(tight.usage?.rejectionsPerDay).toBe(1)
    expect(c.providers).toEqual(['d', 'dfail', 'p', 'q', 'zbad'])
  })

  it('keeps usage unknown while the counter store is down', async () => {
    fakeGateway(200, consumersAnswer)
    const dash = useDashboardStore()
    dash.usage = usage
    dash.error = new ApiError(503, 'store_unavailable', 'down')
    dash.overview = { groups: [{ name: 'spenders', members: 1, limits: { costPerDayMicroUsd: 1500000 } }] }
    const c = useConsumersStore()
    await c.load()
    expect(c.usageState).toBe('failed')
    const bob = c.users.find((u) => u.item.name === 'bob')!
    expect(bob.usage).toBeNull()
    expect(bob.limits).toBeUndefined()
    const spenders = c.groups.find((g) => g.item.name === 'spenders')!
    expect(spenders.usage).toBeNull()
    expect(spenders.limits).toEqual({ costPerDayMicroUsd: 1500000 })
  })

  it('filters by every word over names, groups and access', async () => {
    fakeGateway(200, consumersAnswer)
    const c = useConsumersStore()
    await c.load()
    c.filter = 'spenders'
    expect(c.users.map((u) => u.item.name)).toEqual(['carol'])
    expect(c.groups.map((g) => g.item.name)).toEqual(['spenders'])
    c.filter = 'idle file'
    expect(c.users.map((u) => u.item.name)).toEqual(['erin'])
    c.filter = 'docs-'
    expect(c.groups.map((g) => g.item.name)).toEqual(['spenders'])
    c.filter = 'ADMIN'
    expect(c.users.map((u) => u.item.name)).toEqual(['alice'])
    expect(matches('', ['x'])).toBe(true)
    expect(matches('a b', ['a'])).toBe(false)
  })

  it('lists the providers the matrix shows', () => {
    expect(matrixProviders(consumersAnswer.groups as ConsumerGroup[])).toEqual(['d', 'dfail', 'p', 'q', 'zbad'])
    expect(matrixProviders([])).toEqual([])
  })

  it('keeps the read error and rejects a refused key', async () => {
    fakeGateway(403, { error: { code: 'admin_required', message: 'not an admin' } })
    const c = useConsumersStore()
    await c.load()
    expect(c.error?.status).toBe(403)
    expect(useAuthStore().rejected).toBe(true)
  })
})
