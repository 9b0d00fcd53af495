"""Every query on the saved scheduler configuration."""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy.orm import Session

from kss_sim.engine_host.models import SchedulerConfigurationRecord

_ROW_ID = 1


class SchedulerConfigRepository:
    """Reads and writes the one saved configuration within the caller's session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def load(self) -> dict[str, Any] | None:
        row = self.session.get(SchedulerConfigurationRecord, _ROW_ID)
        if row is None:
            return None
        document: dict[str, Any] = json.loads(row.document)
        return document

    def save(self, document: dict[str, Any]) -> None:
        row = self.session.get(SchedulerConfigurationRecord, _ROW_ID)
        text = json.dumps(document, sort_keys=True)
        if row is None:
            self.session.add(SchedulerConfigurationRecord(id=_ROW_ID, document=text, updated_at=time.time()))
        else:
            row.document = text
            row.updated_at = time.time()
