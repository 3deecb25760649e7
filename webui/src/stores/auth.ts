import { defineStore } from 'pinia'
import { ref } from 'vue'
import { setKey } from '../lib/api'

// The admin key lives in this tab's sessionStorage only (never a cookie
// or localStorage): it is gone when the tab closes.
const storageKey = 'llmgw-admin-key'

export const useAuthStore = defineStore('auth', () => {
  const key = ref(sessionStorage.getItem(storageKey) ?? '')
  // rejected: the gateway refused the key (401/403): the form shows again.
  const rejected = ref(false)
  setKey(key.value)

  function login(k: string) {
    key.value = k.trim()
    rejected.value = false
    sessionStorage.setItem(storageKey, key.value)
    setKey(key.value)
  }

  function reject() {
    rejected.value = true
    key.value = ''
    sessionStorage.removeItem(storageKey)
    setKey('')
  }

  return { key, rejected, login, reject }
})
