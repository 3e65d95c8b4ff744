"""Writes examples/crm-batch.json: 500 leads as a CRM would push them (deterministic).

Phone numbers come in the shapes CRMs really send (+91 98765 43210, 098765-43210,
(415) 555-0134, bare integers); client names are in Latin, Devanagari and Tamil scripts, some
with emoji; a tenth are callbacks on priority 1 with a time in one of the accepted forms.

    python examples/make_crm_batch.py
"""

import json
import random
from pathlib import Path

NAMES = {
    "latin": (["Priya", "Rahul", "Anita", "José", "Zoë", "Mohammed", "Siobhán", "Chen", "Fatima", "Arjun"],
              ["Sharma", "Verma", "Desai", "Álvarez", "O'Brien", "Khan", "Ní Bhriain", "Wei", "Iyer", "Nair"]),
    "devanagari": (["प्रिया", "राहुल", "अनीता", "सुरेश", "अर्जुन"], ["शर्मा", "वर्मा", "देसाई", "गुप्ता"]),
    "tamil": (["கார்த்திக்", "மீனா", "அருண்", "லட்சுமி"], ["ராஜா", "சுந்தரம்", "கிருஷ்ணன்"]),
}
EMOJI = ["🌸", "🚀", "🙏", "⭐", "🏠"]
FORM_TYPES = ["home_loan", "credit_card", "health_insurance", "personal_loan"]


def phone(rng):
    local = f"{rng.randint(6, 9)}{rng.randint(0, 999999999):09d}"
    return rng.choice([
        f"+91 {local[:5]} {local[5:]}",
        f"0{local[:5]}-{local[5:]}",
        f"+91-{local}",
        f"({rng.randint(201, 989)}) 555-{rng.randint(0, 9999):04d}",
        f"+1 {rng.randint(201, 989)} 555 {rng.randint(0, 9999):04d}",
        f"+44 20 7946 {rng.randint(0, 9999):04d}",
        int(local),
    ])


def lead(rng, n):
    first, last = NAMES[rng.choice(list(NAMES))]
    name = f"{rng.choice(first)} {rng.choice(last)}"
    if n % 7 == 0:
        name = f"{name} {rng.choice(EMOJI)}"
    item = {
        "oli_id": f"CRM-2026-{n:06d}",
        "phone_number": phone(rng),
        "client_name": name,
        "form_type": rng.choice(FORM_TYPES),
        "priority_id": 2,
    }
    if n % 10 == 0:
        item["priority_id"] = 1
        item["callback_scheduled_at"] = rng.choice([
            f"2026-11-{rng.randint(22, 28)} {rng.randint(9, 20):02d}:{rng.choice(['00', '15', '30', '45'])}:00",
            f"2026-11-{rng.randint(22, 28)}T{rng.randint(9, 20):02d}:30:00+05:30",
            f"2026-11-{rng.randint(22, 28)} {rng.randint(9, 20):02d}:00",
        ])
    return item


def main():
    rng = random.Random(20261121)
    batch = {"leads": [lead(rng, n) for n in range(1, 501)]}
    path = Path(__file__).with_name("crm-batch.json")
    path.write_text(json.dumps(batch, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path} ({len(batch['leads'])} leads)")


if __name__ == "__main__":
    main()
