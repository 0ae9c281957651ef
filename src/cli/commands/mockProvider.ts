import { startMockProvider, type MockProvider } from '../../gateway/index.js';
import { parseCommandArgs, str } from '../args.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CliIo, type Command } from '../io.js';

export const MOCK_PROVIDER_USAGE = `Usage: toolsearch mock-provider [--port N] [--host H]

Starts the scripted, deterministic OpenAI-compatible provider and prints its base URL.
Put "target=<tool name>" in the user message: it calls that tool (directly, through
tool_search/tool_describe/tool_call, or with one tool_search_code body, depending on the
tools it is offered), then answers with the tool result.

  --port N   port to listen on (default: PORT or 0, a free port)
  --host H   address to bind (default 127.0.0.1)

Routes: POST /v1/chat/completions, GET /v1/models, GET /debug/requests (every request body,
oldest first), DELETE /debug/requests (clears them). Runs until SIGINT or SIGTERM.`;

/** `toolsearch mock-provider [--port N]`: runs the mock provider until SIGINT/SIGTERM. */
export const mockProviderCommand: Command = {
  name: 'mock-provider',
  summary: 'run the scripted OpenAI-compatible mock provider',
  usage: MOCK_PROVIDER_USAGE,
  run: async (argv: string[], io: CliIo): Promise<number> => {
    const parsed = parseCommandArgs(
      argv,
      { port: { type: 'string' }, host: { type: 'string' } },
      { positionals: false },
    );
    if (!parsed.ok) {
      io.stderr(`${parsed.error.message}\n\n${MOCK_PROVIDER_USAGE}`);
      return EXIT_USAGE;
    }
    if (parsed.value.values['help'] === true) {
      io.stdout(MOCK_PROVIDER_USAGE);
      return EXIT_OK;
    }
    const portText = str(parsed.value.values['port']) ?? io.env['PORT'] ?? '0';
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port > 65535) {
      io.stderr(`--port "${portText}" is not a port number: give an integer from 0 to 65535 (0 = a free port).`);
      return EXIT_USAGE;
    }
    let provider: MockProvider;
    try {
      provider = await startMockProvider({ port, host: str(parsed.value.values['host']) ?? '127.0.0.1' });
    } catch (err) {
      io.stderr(`mock-provider: cannot listen on port ${port}: ${err instanceof Error ? err.message : String(err)}`);
      return EXIT_FAILED;
    }
    io.stdout(`mock provider listening on ${provider.url}`);
    await new Promise<void>((resolve) => {
      const stop = (): void => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolve();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    await provider.close();
    io.stdout('mock provider stopped');
    return EXIT_OK;
  },
};
