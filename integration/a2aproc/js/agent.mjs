// An A2A agent built with the official JS SDK (@a2a-js/sdk, JSON-RPC
// transport, A2A v1.0) on 127.0.0.1, for the gateway's integration tests.
//
// Usage: node agent.mjs — prints "LISTENING <port>" once it serves.
//
// - GET /.well-known/agent-card.json: its card, naming its own URL.
// - POST /a2a/jsonrpc: SendMessage answers a message "echo: <text>";
//   SendStreamingMessage for the text "stream" publishes a task, a working
//   status, artifact 1, then waits until GET /release is called (or 10 s
//   pass), then artifact 2 naming which of the two released it, and the
//   completed status. So a client that asks for /release after it read
//   artifact 1 proves the events arrived one by one.
// - GET /stats: the JSON-RPC requests it got, and how many carried an
//   Authorization or x-api-key header (the gateway strips them) and a
//   traceparent (the gateway sets one).
import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const stats = { rpc: 0, credentials: 0, traced: 0 };
let release = null;
const released = new Promise((resolve) => {
	release = resolve;
});

function text(value) {
	return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(ctx, value) {
	return {
		messageId: 'm-' + Math.random().toString(16).slice(2),
		contextId: ctx.contextId,
		taskId: '',
		role: Role.ROLE_AGENT,
		parts: [text(value)],
		metadata: undefined,
		extensions: [],
		referenceTaskIds: [],
	};
}

function status(ctx, state) {
	return {
		kind: 'statusUpdate',
		data: { taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined },
	};
}

function artifact(ctx, id, value) {
	return {
		kind: 'artifactUpdate',
		data: {
			taskId: ctx.taskId,
			contextId: ctx.contextId,
			artifact: { artifactId: id, name: id, description: '', parts: [text(value)], metadata: undefined, extensions: [] },
			append: false,
			lastChunk: true,
			metadata: undefined,
		},
	};
}

const executor = {
	async execute(ctx, bus) {
		const parts = ctx.userMessage.parts || [];
		const said = parts.map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).join('');
		if (said !== 'stream') {
			bus.publish({ kind: 'message', data: agentMessage(ctx, 'echo: ' + said) });
			bus.finished();
			return;
		}
		bus.publish({
			kind: 'task',
			data: {
				id: ctx.taskId,
				contextId: ctx.contextId,
				status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
				artifacts: [],
				history: [ctx.userMessage],
				metadata: undefined,
			},
		});
		bus.publish(status(ctx, TaskState.TASK_STATE_WORKING));
		bus.publish(artifact(ctx, 'part-1', 'first'));
		const by = await Promise.race([released.then(() => 'trigger'), new Promise((r) => setTimeout(() => r('fallback'), 10000))]);
		bus.publish(artifact(ctx, 'part-2', 'second, released by ' + by));
		bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
		bus.finished();
	},
	async cancelTask() {},
};

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
	const port = server.address().port;
	const base = 'http://127.0.0.1:' + port;
	const card = {
		name: 'Gateway Test Agent',
		description: 'Echoes messages; streams two artifacts on "stream"',
		supportedInterfaces: [{ url: base + '/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
		provider: undefined,
		version: '1.0.0',
		capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
		securitySchemes: {},
		securityRequirements: [],
		defaultInputModes: ['text/plain'],
		defaultOutputModes: ['text/plain'],
		skills: [{ id: 'echo', name: 'Echo', description: 'Echoes', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
		signatures: [],
	};
	const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
	app.get('/release', (req, res) => {
		release();
		res.json({ released: true });
	});
	app.get('/stats', (req, res) => res.json(stats));
	app.use('/' + AGENT_CARD_PATH.replace(/^\//, ''), agentCardHandler({ agentCardProvider: handler }));
	app.use('/a2a/jsonrpc', (req, res, next) => {
		stats.rpc++;
		if (req.get('authorization') || req.get('x-api-key')) stats.credentials++;
		if (req.get('traceparent')) stats.traced++;
		next();
	});
	app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
	process.stdout.write('LISTENING ' + port + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
