import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLES } from '../../../functions/bundle.ts';
import { readConfig } from '../../../src/config.ts';
import { testTempDir } from '../../env/temp-dir.ts';

// `osls package` of serverless.yml (DESIGN.md section 15): run with no network at all (a fresh network
// namespace), then the generated CloudFormation is read back: the two functions, the tick's schedule, the
// HTTP routes, memory, timeouts, the environment from the parameters, the VPC, and the zip's content.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const OSLS = join(root, 'node_modules', 'serverless', 'bin', 'serverless.js');

const CA_PEM = readFileSync(join(root, 'test', 'fixtures', 'redis-tls', 'ca.crt'), 'utf8');
const PARAMS = {
  redisUrl: 'rediss://captf.abc123.0001.euw1.cache.amazonaws.com:6379',
  redisTlsCaData: Buffer.from(CA_PEM).toString('base64'),
  stateEncryptionSecret: 'site-key/v2',
  authToken: 'a'.repeat(40),
  kubeconfig: '{"apiVersion":"v1","kind":"Config"}',
  securityGroupId: 'sg-0123456789abcdef0',
  subnetIdA: 'subnet-0aaaaaaaaaaaaaaaa',
  subnetIdB: 'subnet-0bbbbbbbbbbbbbbbb',
};

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}
interface LambdaFunction {
  Handler: string;
  Runtime: string;
  MemorySize: number;
  Timeout: number;
  Architectures: string[];
  Environment: { Variables: Record<string, string> };
  VpcConfig: { SecurityGroupIds: string[]; SubnetIds: string[] };
}

let resources: Record<string, Resource>;
let zipListing: string;

function ofType(type: string): Resource[] {
  return Object.values(resources).filter((resource) => resource.Type === type);
}

function lambda(logicalId: string): LambdaFunction {
  const resource = resources[logicalId];
  expect(resource?.Type, logicalId).toBe('AWS::Lambda::Function');
  return resource?.Properties as unknown as LambdaFunction;
}

beforeAll(async () => {
  const out = testTempDir('captf-osls-package-');
  const params = Object.entries(PARAMS).map(([name, value]) => `--param=${name}=${value}`);
  // unshare -n: a network namespace with only a loopback that is down, so any registry, AWS or telemetry
  // call fails; the package must not need one. Needs root, as the test machines and CI have.
  await run(
    'unshare',
    ['-n', process.execPath, OSLS, 'package', '--stage', 'test', '--package', out, ...params],
    { cwd: root, env: { PATH: process.env.PATH, HOME: process.env.HOME, CI: 'true' } },
  );
  const template = JSON.parse(await readFile(join(out, 'cloudformation-template-update-stack.json'), 'utf8'));
  resources = template.Resources;
  zipListing = (await run('unzip', ['-Z1', join(out, 'captf.zip')])).stdout;
}, 120_000);

describe('osls package of serverless.yml (offline)', () => {
  it('two functions from the one bundle: api (HTTP, 29 s) and tick (scheduled, 60 s), Node 24 on arm64', () => {
    expect(ofType('AWS::Lambda::Function')).toHaveLength(2);
    const api = lambda('ApiLambdaFunction');
    const tick = lambda('TickLambdaFunction');
    expect(api).toMatchObject({ Handler: 'dist/lambda/handler.api', Timeout: 29, MemorySize: 1024 });
    expect(tick).toMatchObject({ Handler: 'dist/lambda/handler.tick', Timeout: 60, MemorySize: 1024 });
    for (const fn of [api, tick]) {
      expect(fn.Runtime).toBe('nodejs24.x');
      expect(fn.Architectures).toEqual(['arm64']);
    }
    // The tick stops claiming at its budget, well inside the function's timeout; so does a /tick over HTTP.
    expect(Number(tick.Environment.Variables.CAPTF_TICK_BUDGET_MS)).toBeLessThan(tick.Timeout * 1000);
    expect(Number(api.Environment.Variables.CAPTF_TICK_BUDGET_MS)).toBeLessThan(api.Timeout * 1000);
  });

  it('the tick runs every minute on an EventBridge schedule that targets the tick function', () => {
    const rules = ofType('AWS::Events::Rule');
    expect(rules).toHaveLength(1);
    const rule = rules[0]?.Properties as {
      ScheduleExpression: string;
      State: string;
      Targets: { Arn: { 'Fn::GetAtt': string[] } }[];
    };
    expect(rule.ScheduleExpression).toBe('rate(1 minute)');
    expect(rule.State).toBe('ENABLED');
    expect(rule.Targets.map((target) => target.Arn['Fn::GetAtt'][0])).toEqual(['TickLambdaFunction']);
  });

  it('one HTTP API (payload 2.0) routes every handler route to the api function', () => {
    const routes = ofType('AWS::ApiGatewayV2::Route').map((route) => route.Properties.RouteKey);
    expect(routes.sort()).toEqual(
      [
        'GET /healthz',
        'GET /metrics',
        'GET /readyz',
        'POST /events',
        'POST /reconcile/{kind}/{namespace}/{name}',
        'POST /tick',
      ].sort(),
    );
    const integrations = ofType('AWS::ApiGatewayV2::Integration');
    expect(integrations).toHaveLength(1);
    expect(integrations[0]?.Properties).toMatchObject({ PayloadFormatVersion: '2.0' });
    expect(JSON.stringify(integrations[0]?.Properties.IntegrationUri)).toContain('ApiLambdaFunction');
  });

  it('the configuration comes from the parameters: Redis, the token, the kubeconfig; auth stays on', () => {
    for (const fn of [lambda('ApiLambdaFunction'), lambda('TickLambdaFunction')]) {
      expect(fn.Environment.Variables).toMatchObject({
        REDIS_URL: PARAMS.redisUrl,
        CAPTF_AUTH_TOKEN: PARAMS.authToken,
        CAPTF_KUBECONFIG_CONTENT: PARAMS.kubeconfig,
        CAPTF_RUNNER_IMAGE: 'ghcr.io/captf/captf-runner:0.1.0',
        CAPTF_KEY_PREFIX: 'captf',
        // Every namespace unless the watchNamespaces parameter names some.
        CAPTF_WATCH_NAMESPACES: '',
        REDIS_TLS_CA_DATA: PARAMS.redisTlsCaData,
        CAPTF_STATE_ENCRYPTION_SECRET: PARAMS.stateEncryptionSecret,
        // A parameter left at its empty default reaches the function empty, which reads as unset.
        CAPTF_STATE_ENCRYPTION_FALLBACK: '',
      });
      expect(fn.Environment.Variables).not.toHaveProperty('CAPTF_AUTH_DISABLED');
      // The public HTTP API keeps /metrics behind the token; no secret store named unless asked for.
      expect(fn.Environment.Variables).toMatchObject({
        CAPTF_METRICS_AUTH: 'true',
        CAPTF_SSM_AUTH_TOKEN: '',
      });
    }
  });

  it('the functions read that environment as a valid configuration: TLS with the CA, the default encryption', () => {
    for (const fn of [lambda('ApiLambdaFunction'), lambda('TickLambdaFunction')]) {
      const read = readConfig(fn.Environment.Variables);
      if (!read.ok) throw new Error(read.message);
      expect(read.config.redis).toEqual({ kind: 'single', url: PARAMS.redisUrl, tls: { ca: CA_PEM } });
      expect(read.config.stateEncryption).toEqual({ passphraseSecretRef: { name: 'site-key', key: 'v2' } });
    }
  });

  it('both functions run in the VPC (Redis) with the VPC execution policy', () => {
    for (const fn of [lambda('ApiLambdaFunction'), lambda('TickLambdaFunction')]) {
      expect(fn.VpcConfig).toEqual({
        SecurityGroupIds: [PARAMS.securityGroupId],
        SubnetIds: [PARAMS.subnetIdA, PARAMS.subnetIdB],
      });
    }
    const role = JSON.stringify(resources.IamRoleLambdaExecution?.Properties);
    expect(role).toContain('AWSLambdaVPCAccessExecutionRole');
    // The secret store, least privilege: the parameters under /captf/ only, decrypted through SSM only.
    expect(role).toContain('":parameter/captf/*"');
    expect(role).toContain('"ssm:GetParameters"');
    expect(role).toContain('"kms:ViaService":"ssm.eu-west-1.amazonaws.com"');
    expect(role).not.toContain('ssm:GetParametersByPath');
    // docs/install.md shows the same statements (the ARN with an example account and region).
    const doc = readFileSync(join(root, 'docs', 'install.md'), 'utf8');
    const shown = /holds, beside the VPC execution policy, exactly this[\s\S]*?```json\n([\s\S]*?)```/.exec(
      doc,
    )?.[1];
    const statements = (
      JSON.parse(shown ?? '{}') as { Statement: { Action: string[]; Condition?: unknown }[] }
    ).Statement;
    const packaged = JSON.stringify(resources.IamRoleLambdaExecution?.Properties?.Policies);
    for (const statement of statements) {
      for (const action of statement.Action) expect(packaged).toContain(`"${action}"`);
      if (statement.Condition)
        expect(packaged).toContain(JSON.stringify(statement.Condition).slice(1, -1).replace(/\s/g, ''));
    }
    expect(statements.flatMap((statement) => statement.Action).sort()).toEqual([
      'kms:Decrypt',
      'ssm:GetParameters',
    ]);
  });

  it('the artifact holds only the Lambda bundle', () => {
    expect(zipListing.trim().split('\n').sort()).toEqual(
      [BUNDLES.lambda.outfile, `${BUNDLES.lambda.outfile}.LEGAL.txt`].sort(),
    );
  });
});
