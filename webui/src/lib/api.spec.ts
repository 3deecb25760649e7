import { describe, expect, it } from 'vitest'
import { apiGet, ApiError, query, setKey } from './api'

function fakeFetch(status: number, body: string, seen: { url?: string; key?: string }) {
  return (async (url: string, init?: RequestInit) => {
    seen.url = url
    seen.key = (init?.headers as Record<string, string>)['x-api-key']
    return new Response(body, { status })
  }) as unknown as typeof fetch
}

describe('api', () => {
  it('encodes repeated and absent parameters', () => {
    expect(query({ scope: ['total', 'user:a'], metric: 'req', span: undefined })).toBe('?scope=total&scope=user%3Aa&metric=req')
    expect(query()).toBe('')
  })
  it('sends the key and parses the answer', async () => {
    setKey('sk-admin')
    const seen: { url?: string; key?: string } = {}
    const v = await apiGet<{ a: number }>('usage', { window: 'day' }, fakeFetch(200, '{"a":1}', seen))
    expect(v.a).toBe(1)
    expect(seen.url).toBe('/admin/api/usage?window=day')
    expect(seen.key).toBe('sk-admin')
  })
  it('turns an error envelope into an ApiError', async () => {
    const seen = {}
    const body = '{"error":{"message":"the counter store is unreachable","type":"api_error","code":"store_unavailable"}}'
    const err = (await apiGet("usage", undefined, fakeFetch(503, body, seen)).catch((e) => e)) as ApiError
    expect(err).toBeInstanceOf(ApiError)
    expect(err.storeDown).toBe(true)
    expect(err.code).toBe('store_unavailable')
    const denied = (await apiGet('usage', undefined, fakeFetch(403, '{"error":{"code":"admin_required","message":"no"}}', seen)).catch((e) => e)) as ApiError
    expect(denied.unauthorized).toBe(true)
  })
})
