import { defineStore } from 'pinia'
import { ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import type { JsonValue } from '../lib/yaml-emit'
import { useAuthStore } from './auth'

// The Config page's source: GET config, the redacted configuration the
// gateway was built from (it does not change while the gateway runs, so
// it is read when the page opens, or on request).

// ConfigAnswer is GET config.
export interface ConfigAnswer {
  config: { [key: string]: JsonValue }
  warnings: string[]
  warningsDropped?: number
  features: Record<string, boolean>
}

export const useConfigStore = defineStore('config', () => {
  const answer = ref<ConfigAnswer | null>(null)
  const error = ref<ApiError | null>(null)
  const loading = ref(false)

  async function load() {
    loading.value = true
    try {
      answer.value = await apiGet<ConfigAnswer>('config')
      error.value = null
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(0, 'network', String(e))
      if (err.unauthorized) useAuthStore().reject()
      error.value = err
    } finally {
      loading.value = false
    }
  }

  return { answer, error, loading, load }
})
