import { openMemoryBus } from '../../src/bus/index.js';
import { createRemoteSandbox, createSandbox, startSandboxRunner } from '../../src/sandbox/index.js';
import { testSandbox } from './contract.js';

testSandbox('local (child processes on this host)', async () => {
  const sandbox = createSandbox({ poolSize: 1 });
  return { sandbox, cleanup: () => sandbox.close() };
});

testSandbox('remote (a sandbox runner on the bus)', async () => {
  const bus = await openMemoryBus({ logPath: false });
  const local = createSandbox({ poolSize: 1 });
  const runner = startSandboxRunner({ bus, sandbox: local });
  const sandbox = createRemoteSandbox({ bus, heartbeatMs: 200 });
  return {
    sandbox,
    cleanup: async () => {
      await sandbox.close();
      await runner.stop();
      await local.close();
      await bus.close();
    },
  };
});
