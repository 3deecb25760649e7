import { createRouter, createWebHashHistory } from 'vue-router'
import HomePage from './pages/HomePage.vue'
import SpendPage from './pages/SpendPage.vue'
import ConsumersPage from './pages/ConsumersPage.vue'
import ModelsPage from './pages/ModelsPage.vue'
import ReliabilityPage from './pages/ReliabilityPage.vue'
import EventsPage from './pages/EventsPage.vue'
import TargetsPage from './pages/TargetsPage.vue'
import ConfigPage from './pages/ConfigPage.vue'

// The pages, in the navigation's order. Hash history: the gateway
// serves one document at /admin.
export const pages = [
  { path: '/', name: 'home', title: 'Home', component: HomePage },
  { path: '/spend', name: 'spend', title: 'Spend', component: SpendPage },
  { path: '/consumers', name: 'consumers', title: 'Consumers', component: ConsumersPage },
  { path: '/models', name: 'models', title: 'Models', component: ModelsPage },
  { path: '/reliability', name: 'reliability', title: 'Reliability', component: ReliabilityPage },
  { path: '/events', name: 'events', title: 'Events', component: EventsPage },
  { path: '/targets', name: 'targets', title: 'MCP & Agents', component: TargetsPage },
  { path: '/config', name: 'config', title: 'Config', component: ConfigPage },
]

export const router = createRouter({
  history: createWebHashHistory(),
  routes: pages.map((p) => ({ path: p.path, name: p.name, component: p.component })),
})
