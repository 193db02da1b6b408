// A real OpenID provider for Tranche's sign-in tests (tests/it/oidc.rs): the `oidc-provider`
// package (a certified OpenID Connect implementation) on a loopback port, with its own login
// and consent pages (its development interactions: any password is accepted there).
//
//   node provider.mjs --port PORT --state STATE.json --key KEY.json [--issuer URL]
//
// STATE.json is read again at every request, so a test changes users, groups and faults
// between sign-ins by rewriting it:
//
//   {
//     "client": {"client_id": "tranche", "client_secret": "...", "redirect_uri": "...",
//                "post_logout_redirect_uri": "..."},
//     "users": {"alice": {"groups": ["gpu-admins"], "name": "Alice"}},
//     "faults": {
//       "audience": "other-client",   // ID tokens name this audience instead of the client
//       "expired": true,              // ID tokens expired ten minutes ago
//       "nonce": "not-yours",         // ID tokens carry this nonce instead of the request's
//       "bad_signature": true,        // one byte of each ID token's signature is flipped
//       "discovery_issuer": "URL",    // the discovery document names this issuer
//       "delay_ms": 5000,             // every answer waits this long first
//       "slow_token_ms": 5000         // the token endpoint waits this long first
//     }
//   }
//
// The client is read once at start (oidc-provider keeps its clients); KEY.json is the private
// JWK the provider signs with, made (RSA 2048, a fresh kid) when the file does not exist; a
// test restarts the provider with another to rotate keys.
// The provider prints "listening PORT" once it accepts connections.

import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    state: { type: 'string' },
    key: { type: 'string' },
    issuer: { type: 'string' },
  },
});

const port = Number(args.port);
const issuer = args.issuer ?? `http://127.0.0.1:${port}`;
const readState = () => JSON.parse(readFileSync(args.state, 'utf8'));
const faults = () => readState().faults ?? {};
const { client } = readState();
if (!existsSync(args.key)) {
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  writeFileSync(args.key, JSON.stringify({ ...jwk, kid: randomUUID(), use: 'sig', alg: 'RS256' }));
}

const provider = new Provider(issuer, {
  clients: [{
    client_id: client.client_id,
    client_secret: client.client_secret,
    redirect_uris: [client.redirect_uri],
    post_logout_redirect_uris: [client.post_logout_redirect_uri],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [JSON.parse(readFileSync(args.key, 'utf8'))] },
  // The claims go into the ID token itself, which is what Tranche reads.
  conformIdTokenClaims: false,
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name', 'groups'],
  },
  pkce: { required: () => true },
  cookies: { keys: ['tranche-test-cookie-key'] },
  async findAccount(ctx, id) {
    const user = readState().users?.[id];
    if (!user) return undefined;
    return {
      accountId: id,
      async claims() {
        // Read again at each token, so a group removed in STATE.json is gone at the next
        // sign-in.
        const now = readState().users?.[id] ?? user;
        return {
          sub: id, preferred_username: id, name: now.name ?? id, groups: now.groups ?? [],
        };
      },
    };
  },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
});

// Faults a test asks for, applied to genuinely signed ID tokens.
const { IdToken } = provider;
const issue = IdToken.prototype.issue;
IdToken.prototype.issue = async function faultyIssue(options = {}) {
  const f = faults();
  if (options.use !== 'idtoken') return issue.call(this, options);
  if (f.nonce) this.set('nonce', f.nonce);
  if (f.audience) {
    const real = this.client;
    this.client = new Proxy(real, {
      get: (target, prop) => (prop === 'clientId' ? f.audience : Reflect.get(target, prop)),
    });
  }
  let opts = options;
  if (f.expired) {
    // A lifetime that ended ten minutes ago: oidc-provider signs `exp` = now - 600.
    opts = { ...options, expiresAt: Math.floor(Date.now() / 1000) - 600 };
  }
  let token = await issue.call(this, opts);
  if (f.bad_signature) {
    const [head, body, sig] = token.split('.');
    const bytes = Buffer.from(sig, 'base64url');
    bytes[bytes.length >> 1] ^= 0x01;
    token = `${head}.${body}.${bytes.toString('base64url')}`;
  }
  return token;
};

provider.use(async (ctx, next) => {
  const f = faults();
  const delay = (f.delay_ms ?? 0) + (ctx.path === '/token' ? (f.slow_token_ms ?? 0) : 0);
  if (delay) await new Promise((resolve) => { setTimeout(resolve, delay); });
  await next();
  if (f.discovery_issuer && ctx.path === '/.well-known/openid-configuration') {
    ctx.body = { ...ctx.body, issuer: f.discovery_issuer };
  }
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`listening ${port}`);
});
