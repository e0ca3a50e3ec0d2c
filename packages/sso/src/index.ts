/**
 * Federation for idt (work in progress): the protocol building blocks of
 * the `sso()` module.
 *
 * @packageDocumentation
 */
export {};
