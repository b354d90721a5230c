import { Controller, Get, Header, Res } from '@nestjs/common';
import { type Response } from 'express';
import { MetricsService } from './metrics.service.js';

@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  async scrape(@Res() response: Response): Promise<void> {
    response.type(this.metrics.contentType).send(await this.metrics.render());
  }
}
