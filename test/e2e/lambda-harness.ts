import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { parse } from 'yaml';
import { applyClusterResources } from '../../src/local/cluster-resources.ts';
import { DEDICATED_TAINT_KEY } from '../../src/local/dedicated-node.ts';
import { type Kubectl, kubectlFor } from '../../src/local/kubectl.ts';
import { LOCAL_RUNNER_IMAGE } from '../../src/local/local-controller.ts';
import { freePort } from '../../src/local/ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from '../../src/local/process.ts';
import { type RealNode, startRealNode } from '../../src/local/real-node/real-node.ts';
import { prepareWorkloadNamespace } from '../../src/local/workload-namespace.ts';
import { testStack } from '../env/index.ts';
import { locateMotoServer } from '../env/moto.ts';
import { testTempDir } from '../env/temp-dir.ts';

/**
 * The AWS Lambda path on the test stack (serverless.yml): serverless-offline runs the packaged handler
 * (dist/lambda/handler.mjs, the `api` and `tick` functions) with the environment serverless.yml gives
 * it, behind its HTTP API emulation; the relay bundle (dist/relay/relay.mjs) sends the API server's
 * changes to `<HTTP API>/events` with the bearer token, as infra/lambda/relay.yaml does in a cluster; and a
 * ticker invokes the `tick` function through serverless-offline's Lambda Invoke API with an EventBridge
 * Scheduled Event, as the schedule does (every 2 s instead of every minute). No other handler runs, so
 * every step is a Lambda invocation. Job pods run on a local node of their own. The functions read the
 * kubeconfig and the bearer token from SSM Parameter Store (moto's server), not from their environment.
 */

const repoRoot = join(import.meta.dirname, '..', '..');
const OSLS = join(repoRoot, 'node_modules', 'serverless', 'bin', 'serverless.js');
const STAGE = 'e2e';
/** serverless-offline's Lambda name of the scheduled function: `<service>-<stage>-<function>`. */
const TICK_FUNCTION = `captf-${STAGE}-tick`;
const READY_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 15_000;
const TICK_INTERVAL_MS = 2000;

/** One invocation of the `tick` function, as the ticker saw it. */
export interface TickInvocation {
  status: number;
  /** The function's answer: the tick report, or Lambda's error document. */
  body: Record<string, unknown>;
}

/** A running Lambda environment. */
export interface LambdaRun {
  namespace: string;
  nodeName: string;
  kubectl: Kubectl;
  /** serverless-offline's HTTP API, e.g. `http://127.0.0.1:<port>`. */
  httpApiUrl: string;
  /** Bearer token of the HTTP routes (serverless.yml `authToken`). */
  token: string;
  /** Invocations of `tick` so far. */
  ticks: TickInvocation[];
  /** serverless-offline's log so far: one line per invocation, with the function's name. */
  offlineLog(): string;
  /** Writes a new value of one of the functions' SSM parameters (`auth-token`, `kubeconfig`): a rotation. */
  rotateSecret(name: 'auth-token' | 'kubeconfig', value: string): Promise<void>;
  close(): Promise<void>;
}

/** The stack's kubeconfig as one line of JSON: osls takes a `--param` value up to its first newline. */
function kubeconfigOneLine(path: string): string {
  return JSON.stringify(parse(readFileSync(path, 'utf8')));
}

async function invokeTick(lambdaUrl: string, index: number): Promise<TickInvocation> {
  const scheduledEvent = {
    version: '0',
    id: `e2e-tick-${index}`,
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    time: new Date().toISOString(),
    region: 'eu-west-1',
    resources: [`arn:aws:events:eu-west-1:000000000000:rule/${TICK_FUNCTION}`],
    detail: {},
  };
  const response = await fetch(`${lambdaUrl}/2015-03-31/functions/${TICK_FUNCTION}/invocations`, {
    method: 'POST',
    body: JSON.stringify(scheduledEvent),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Starts serverless-offline, the relay, the ticker and a local node; prepares a fresh namespace. */
export async function startLambdaRun(label: string): Promise<LambdaRun> {
  const stack = testStack();
  const suffix = randomBytes(3).toString('hex');
  const namespace = `lambda-${label}-${suffix}`;
  // The node's pod directories and the logs: removed after the file's last test, a failed start's too.
  const workDir = testTempDir(`captf-lambda-${label}-`);
  const logDir = join(workDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const kubectl = kubectlFor(stack.kubectlPath, stack.kubeconfigPath);
  const nodeName = `captf-lambda-${label}-${suffix}`;
  const keyPrefix = `lambda-${label}-${suffix}`;
  const token = randomBytes(24).toString('hex');
  // The approval policy is cluster-wide; leave the shared stack as it was found (test/e2e/harness.ts).
  const policyFile = join(repoRoot, 'infra', 'admission', 'approval-policy.yaml');
  const policyBefore = await kubectl
    .run(['get', '-f', policyFile, '-o', 'name'])
    .then(() => true)
    .catch(() => false);
  await applyClusterResources(kubectl, repoRoot);

  const started: ManagedProcess[] = [];
  let node: RealNode | undefined;
  let ticking = true;
  let ticker: Promise<void> = Promise.resolve();
  const stopAll = async (): Promise<void> => {
    ticking = false;
    await ticker;
    for (const proc of [...started].reverse()) await proc.stop(STOP_GRACE_MS);
    await node?.stop();
  };
  try {
    node = await startRealNode({
      stack,
      dir: join(workDir, 'node'),
      logDir,
      nodeName,
      // Only this run's pods (they tolerate its taint: sampleDocuments), not other files' leftovers.
      taints: [{ key: DEDICATED_TAINT_KEY, value: nodeName, effect: 'NoSchedule' }],
    });

    // The secrets come from SSM Parameter Store, as serverless.yml recommends: moto's server stands for it
    // (a real implementation of the SSM API, installed by scripts/lib.sh), so the functions' environment
    // holds parameter names, never the token or the kubeconfig.
    const motoPort = await freePort();
    const ssmUrl = `http://127.0.0.1:${motoPort}`;
    const moto = startProcess(
      'moto',
      locateMotoServer(),
      ['-H', '127.0.0.1', '-p', String(motoPort)],
      logDir,
      {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
      },
    );
    started.push(moto);
    await waitUntilHealthy(
      moto,
      'answering',
      async () => (await fetch(`${ssmUrl}/moto-api/`).catch(() => undefined))?.ok === true,
      READY_TIMEOUT_MS,
    );
    const awsEnv = {
      AWS_ENDPOINT_URL_SSM: ssmUrl,
      AWS_ACCESS_KEY_ID: 'offline',
      AWS_SECRET_ACCESS_KEY: 'offline',
    };
    const parameterPath = `/captf/${STAGE}-${suffix}/`;
    const putSecret = async (name: string, value: string): Promise<void> => {
      const ssm = new SSMClient({
        endpoint: ssmUrl,
        region: 'eu-west-1',
        credentials: { accessKeyId: awsEnv.AWS_ACCESS_KEY_ID, secretAccessKey: awsEnv.AWS_SECRET_ACCESS_KEY },
      });
      await ssm.send(
        new PutParameterCommand({
          Name: `${parameterPath}${name}`,
          Value: value,
          Type: 'SecureString',
          Overwrite: true,
        }),
      );
      ssm.destroy();
    };
    await putSecret('kubeconfig', kubeconfigOneLine(stack.kubeconfigPath));
    await putSecret('auth-token', token);

    const [httpPort, lambdaPort] = [await freePort(), await freePort()];
    const httpApiUrl = `http://127.0.0.1:${httpPort}`;
    const lambdaUrl = `http://127.0.0.1:${lambdaPort}`;
    const params = {
      redisUrl: stack.redisUrl,
      ssmParameterPath: parameterPath,
      ssmKubeconfig: `${parameterPath}kubeconfig`,
      ssmAuthToken: `${parameterPath}auth-token`,
      runnerImage: LOCAL_RUNNER_IMAGE,
      keyPrefix,
      syncPeriodSeconds: '60',
      // Its own namespace only: other test files' leftovers on the shared API server are not its objects.
      watchNamespaces: namespace,
      // The VPC settings only matter on AWS; serverless-offline ignores them, osls still wants values.
      securityGroupId: 'sg-offline',
      subnetIdA: 'subnet-offline-a',
      subnetIdB: 'subnet-offline-b',
    };
    const offline = startProcess(
      'serverless-offline',
      process.execPath,
      [
        OSLS,
        'offline',
        'start',
        '--stage',
        STAGE,
        '--host',
        '127.0.0.1',
        '--httpPort',
        String(httpPort),
        '--lambdaPort',
        String(lambdaPort),
        ...Object.entries(params).map(([name, value]) => `--param=${name}=${value}`),
      ],
      logDir,
      // serverless-offline passes the AWS_* variables on to the functions: SSM's endpoint and credentials.
      { PATH: process.env.PATH, HOME: process.env.HOME, CI: 'true', ...awsEnv },
      repoRoot,
    );
    started.push(offline);
    // The first /readyz is the `api` function's cold start: it builds the handlers and reaches Redis and
    // the API server.
    await waitUntilHealthy(
      offline,
      'ready (/readyz through the api function)',
      async () => (await fetch(`${httpApiUrl}/readyz`)).ok,
      READY_TIMEOUT_MS,
      1000,
    );

    const relay = startProcess(
      'relay',
      process.execPath,
      [join(repoRoot, 'dist', 'relay', 'relay.mjs')],
      logDir,
      {
        PATH: process.env.PATH,
        CAPTF_HANDLER_URL: httpApiUrl,
        CAPTF_AUTH_TOKEN: token,
        REDIS_URL: stack.redisUrl,
        KUBECONFIG: stack.kubeconfigPath,
        CAPTF_KEY_PREFIX: keyPrefix,
        CAPTF_WATCH_NAMESPACES: namespace,
        // The schedule calls `tick`; the relay only relays.
        CAPTF_TICK_INTERVAL_MS: '0',
        HOSTNAME: `relay-${suffix}`,
        LOG_LEVEL: 'info',
      },
    );
    started.push(relay);
    await waitUntilHealthy(
      relay,
      'watching',
      async () => readFileSync(relay.logPath, 'utf8').includes('relay: lease taken'),
      READY_TIMEOUT_MS,
    );

    const ticks: TickInvocation[] = [];
    ticker = (async () => {
      while (ticking) {
        ticks.push(await invokeTick(lambdaUrl, ticks.length));
        await sleep(TICK_INTERVAL_MS);
      }
    })();

    await prepareWorkloadNamespace(kubectl, namespace, stack);
    return {
      namespace,
      nodeName,
      kubectl,
      httpApiUrl,
      token,
      ticks,
      offlineLog: () => readFileSync(offline.logPath, 'utf8'),
      rotateSecret: putSecret,
      close: async () => {
        // The handlers stop first (running, they would put back the finalizers removed below); then the
        // finalizers go: with the handlers gone nobody would remove them and the namespace would hang.
        await stopAll();
        for (const resource of ['terraformclusters', 'terraformmachines']) {
          const names = await kubectl.run(['get', resource, '-n', namespace, '-o', 'name']).catch(() => '');
          for (const name of names.split('\n').filter(Boolean)) {
            await kubectl
              .run(['patch', name, '-n', namespace, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'])
              .catch(() => undefined);
          }
        }
        if (!policyBefore)
          await kubectl.run(['delete', '-f', policyFile, '--ignore-not-found']).catch(() => undefined);
        await kubectl.run(['delete', 'namespace', namespace, '--wait=false']).catch(() => undefined);
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
