import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createPinia, setActivePinia } from 'pinia'
import { useConfigStore } from './config'
import golden from '../fixtures/config-config.json'

describe('config store', () => {
  beforeEach(() => setActivePinia(createPinia()))
  afterEach(() => vi.unstubAllGlobals())

  it('reads GET config once asked', async () => {
    const urls: string[] = []
    vi.stubGlobal('fetch', vi.fn(async (u: string) => (urls.push(u), new Response(JSON.stringify(golden), { status: 200 }))))
    const store = useConfigStore()
    await store.load()
    expect(urls).toEqual(['/admin/api/config'])
    expect(store.answer?.warnings).toHaveLength(1)
    expect(store.answer?.features.cacheStats).toBe(true)
    expect(store.loading).toBe(false)
  })
  it('records a failure', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response('{"error":{"code":"http_500","message":"boom"}}', { status: 500 })))
    const store = useConfigStore()
    await store.load()
    expect(store.answer).toBeNull()
    expect(store.error?.status).toBe(500)
  })
})
