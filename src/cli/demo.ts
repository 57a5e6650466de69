// `rvma demo rendezvous|pipeline`: runs a demo's launcher (dist/examples) as a child process
// with the settings given as options; its output and exit status are the demo's.
import { fork } from 'node:child_process';
import { compiled } from './package-root';

export interface DemoOptions {
  workers?: number;
  steps?: number;
  tokens?: number;
  transport?: string;
  model?: string;
  redis?: string;
}

/** The modules a demo needs beyond the library's own dependencies, and how to get them. */
const EXTRA_MODULES: Record<string, string[]> = { rendezvous: [], pipeline: ['onnxruntime-node', 'onnx-proto'] };

function environment(demo: string, o: DemoOptions): NodeJS.ProcessEnv {
  const env = { ...process.env };
  const set = (name: string, value: string | number | undefined): void => {
    if (value !== undefined) env[name] = String(value);
  };
  if (o.redis !== undefined) env.REDIS_URL = o.redis;
  if (demo === 'rendezvous') {
    set('RVMA_DEMO_WORKERS', o.workers);
    set('RVMA_DEMO_STEPS', o.steps);
  } else {
    set('RVMA_PIPELINE_WORKERS', o.workers);
    set('RVMA_PIPELINE_TOKENS', o.tokens);
    set('RVMA_PIPELINE_TRANSPORT', o.transport);
    set('RVMA_PIPELINE_MODEL', o.model);
  }
  return env;
}

export async function runDemo(demo: string, o: DemoOptions): Promise<void> {
  const launcher = compiled(demo === 'rendezvous' ? 'examples/demo/launcher.js' : 'examples/pipeline/launcher.js');
  const missing = EXTRA_MODULES[demo].filter((name) => {
    try {
      require.resolve(name, { paths: [launcher] });
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length) throw new Error(`the ${demo} demo needs ${missing.join(' and ')}: npm install ${missing.join(' ')}`);
  const child = fork(launcher, [], { env: environment(demo, o), stdio: 'inherit' });
  // Ctrl-C reaches the demo's process group; the launcher stops its workers itself.
  const status = await new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  if (status !== 0) process.exitCode = status;
}
