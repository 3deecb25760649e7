import { defineStore } from 'pinia'
import { ref } from 'vue'

// The scope filter every page shares: all traffic, one group, or one
// user (pages narrow their reads and tables by it).
export type Scope = { kind: 'total' } | { kind: 'group'; id: string } | { kind: 'user'; id: string }

export const useScopeStore = defineStore('scope', () => {
  const scope = ref<Scope>({ kind: 'total' })
  function set(s: Scope) {
    scope.value = s
  }
  // param is the scope in usage/series form ("total", "user:alice").
  function param(): string {
    const s = scope.value
    return s.kind === 'total' ? 'total' : s.kind + ':' + s.id
  }
  return { scope, set, param }
})
