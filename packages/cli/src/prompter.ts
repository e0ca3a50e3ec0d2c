/** Checks an answer: `true` to accept it, or the message to show before asking again. */
export type AnswerCheck = (value: string) => true | string;

/**
 * Asks questions on a terminal. The binary uses {@link createTerminalPrompter};
 * tests inject their own answers.
 */
export interface Prompter {
  /** Asks for a line of text; re-asks while `validate` rejects the answer. */
  input(message: string, options?: { readonly default?: string; readonly validate?: AnswerCheck }): Promise<string>;
  /** Asks for a secret without echoing it; re-asks while `validate` rejects the answer. */
  password(message: string, options?: { readonly validate?: AnswerCheck }): Promise<string>;
  /** Asks a yes/no question (default no); without it, commands ask with {@link input} for `yes`. */
  confirm?(message: string): Promise<boolean>;
}

/**
 * The terminal prompter, on `@inquirer/prompts`. Questions are written to
 * standard error, so standard output stays clean for `--json`.
 *
 * @example
 * const prompter = createTerminalPrompter();
 * const email = await prompter.input('E-mail address');
 */
export function createTerminalPrompter(): Prompter {
  const context = { input: process.stdin, output: process.stderr };
  return {
    async input(message, options = {}) {
      const { input } = await import('@inquirer/prompts');
      return input(
        {
          message,
          ...(options.default !== undefined ? { default: options.default } : {}),
          ...(options.validate ? { validate: options.validate } : {}),
        },
        context,
      );
    },
    async password(message, options = {}) {
      const { password } = await import('@inquirer/prompts');
      return password({ message, mask: true, ...(options.validate ? { validate: options.validate } : {}) }, context);
    },
    async confirm(message) {
      const { confirm } = await import('@inquirer/prompts');
      return confirm({ message, default: false }, context);
    },
  };
}
