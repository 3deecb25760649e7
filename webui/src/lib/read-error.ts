// How the pages' on-demand reads (beyond the dashboard's poll) treat a
// failure.
import { ApiError } from './api'

// asApiError turns whatever a read threw into an ApiError (a network
// failure is status 0).
export function asApiError(e: unknown): ApiError {
  return e instanceof ApiError ? e : new ApiError(0, 'network', String(e))
}

// failureText says why a read's figures are missing: a 503 is the store
// being unreachable — "unavailable", never zero.
export function failureText(e: ApiError): string {
  if (e.storeDown) return 'unavailable: the counter store is unreachable'
  if (e.status === 0) return 'unavailable: the gateway could not be reached'
  return 'unavailable: ' + e.message
}
