import { createFakeEngine } from '../gateway/fakeEngine.js';
import { testTurnEngine } from './engineContract.js';
import { makeWorld } from './fixture.js';

testTurnEngine('the engine (memory bus, embedded enforcer)', async () => {
  const world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } } });
  return {
    engine: world.engine,
    tool: { id: 'openclaw:demo:echo_text', name: 'echo_text', query: 'echo text', args: { text: 'hi' } },
    cleanup: () => world.close(),
  };
});

testTurnEngine('the fake engine of the front tests', async () => {
  const engine = createFakeEngine({ mode: 'tools', tools: 5 });
  return {
    engine,
    tool: {
      id: 'openclaw:fake:fake_plugin_tool_1',
      name: 'fake_plugin_tool_1',
      query: 'fake plugin tool 1',
      args: { text: 'hi', count: 1, flag: true, unit: 'celsius' },
    },
    cleanup: () => engine.close(),
  };
});
