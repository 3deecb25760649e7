import { describe, expect, it } from 'vitest'
import { ApiError } from './api'
import { asApiError, failureText } from './read-error'

describe('read errors', () => {
  it('says a 503 is unavailable, not zero', () => {
    expect(failureText(new ApiError(503, 'store_unavailable', 'x'))).toBe('unavailable: the counter store is unreachable')
    expect(failureText(new ApiError(400, 'too_many_keys', 'too many keys'))).toBe('unavailable: too many keys')
  })
  it('wraps a network failure', () => {
    const e = asApiError(new TypeError('Failed to fetch'))
    expect(e.status).toBe(0)
    expect(failureText(e)).toBe('unavailable: the gateway could not be reached')
    const api = new ApiError(404, 'not_found', 'no')
    expect(asApiError(api)).toBe(api)
  })
})
