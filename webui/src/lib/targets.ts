// GET targets (polled by the dashboard store): MCP servers and agents,
// and how the MCP & Agents page words their access and health.

export interface TargetHealth {
  state: 'unknown' | 'healthy' | 'unhealthy'
  consecutiveFailures: number
  // The rest are absent until the target has been observed at all.
  lastCheck?: string
  lastError?: string
  latencyMs?: number
  source?: 'passive' | 'probe'
}

export interface TargetCounters {
  requestsPerMinute: number
  requestsPerDay: number
  requestsPerMonth: number
}

export interface Target {
  name: string
  url: string
  // access: the groups that reach it; null every group, [] none.
  access: string[] | null
  // counters: absent when the counter read failed.
  counters?: TargetCounters
  health: TargetHealth
}

export interface TargetsAnswer {
  mcpServers: Target[]
  agents: Target[]
  countersUnavailable?: boolean
}

// accessLabel words a target's access list.
export function accessLabel(access: string[] | null): string {
  if (access === null) return 'every group'
  if (access.length === 0) return 'no group'
  return access.join(', ')
}

// reaches says a group reaches the target.
export function reaches(t: Target, group: string): boolean {
  return t.access === null || t.access.includes(group)
}

// observed: the target has been called or probed at least once.
export function observed(h: TargetHealth): boolean {
  return h.lastCheck !== undefined
}

// counter is one counter's figure, or null when the read failed.
export function counter(t: Target, countersUnavailable: boolean | undefined, key: keyof TargetCounters): number | null {
  if (countersUnavailable || !t.counters) return null
  return t.counters[key]
}
