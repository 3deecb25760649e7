// An A2A client built with the official JS SDK (@a2a-js/sdk), for the
// gateway's integration tests.
//
// Usage: node client.mjs <agent base URL through the gateway> <gateway key> <release URL>
//
// It reads the agent card (<base>/.well-known/agent-card.json), sends
// SendMessage "hello", then SendStreamingMessage "stream", asking for
// <release URL> as soon as the first artifact arrived. Every outcome is one
// JSON line on stdout: {"card": ...}, {"send": ...}, {"event": ...},
// {"done": true}; a failure exits non-zero with the error on stderr.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Role } from '@a2a-js/sdk';

const [base, key, releaseURL] = process.argv.slice(2);
const authedFetch = (input, init = {}) => {
	const headers = new Headers(init.headers || {});
	headers.set('Authorization', 'Bearer ' + key);
	return fetch(input, { ...init, headers });
};
const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');

function userMessage(value) {
	return {
		messageId: 'u-' + Math.random().toString(16).slice(2),
		contextId: '',
		taskId: '',
		role: Role.ROLE_USER,
		parts: [{ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
		metadata: undefined,
		extensions: [],
		referenceTaskIds: [],
	};
}

function request(value) {
	return { tenant: '', message: userMessage(value), configuration: undefined, metadata: undefined };
}

const resolver = new DefaultAgentCardResolver({ fetchImpl: authedFetch });
// The card is at <base>/.well-known/agent-card.json: passed whole (a path
// argument would replace the base's own path).
const card = await resolver.resolve(base + '/.well-known/agent-card.json', '');
out({ card: card.supportedInterfaces.map((i) => i.url) });
const factory = new ClientFactory(
	ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
		transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch })],
	})
);
const client = await factory.createFromAgentCard(card);
const sent = await client.sendMessage(request('hello'));
out({ send: sent });
let releasedAsked = false;
for await (const ev of client.sendMessageStream(request('stream'))) {
	const p = ev.payload || ev;
	out({ event: { kind: p.$case || p.kind, value: p.value || p } });
	if (!releasedAsked && p.$case === 'artifactUpdate') {
		releasedAsked = true;
		const r = await fetch(releaseURL);
		if (!r.ok) throw new Error('release: HTTP ' + r.status);
	}
}
out({ done: true });
