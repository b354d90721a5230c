import { RequestMethod } from '@nestjs/common';
import { type ApplicationConfig } from '@nestjs/core';
import { RoutePathFactory } from '@nestjs/core/router/route-path-factory.js';

/**
 * The paths Nest serves a controller's `@Get(methodPath)` at, as its router builds them: the app's
 * global prefix (unless its `exclude` list takes the route) and, under URI versioning, the
 * default version. Why Nest's own RoutePathFactory: Scribe's steps must stand exactly where
 * Nest serves /health and /metrics, and a copy of its rules (prefix, exclusions, versions)
 * would drift from them. Read once the host has set them, at the first request.
 */
export function nestRoutePaths(
  config: ApplicationConfig,
  controllerPath: string,
  methodPath = '/',
): string[] {
  const versioningOptions = config.getVersioning();
  return new RoutePathFactory(config).create(
    {
      ctrlPath: controllerPath,
      methodPath,
      globalPrefix: config.getGlobalPrefix(),
      versioningOptions,
      controllerVersion: versioningOptions?.defaultVersion,
    },
    RequestMethod.GET,
  );
}
