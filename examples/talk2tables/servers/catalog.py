"""The example's data: a small product, inventory and sales database, generated the same every time.

The document's database server serves "sales, orders, transactions" from SQLite; this module
owns what is in it. Generation is seeded, so tests can count on the stock levels; sale dates
are relative to an anchor day (today by default) so "this month" always has sales. Product
123 is the document's ``Magic Wand Pro``, the product the metadata server's alias
``abracadabra`` points at.
"""

from __future__ import annotations

import datetime
import random
import sqlite3

__all__ = ["PRODUCTS", "RESTRICTED_TABLES", "SCHEMA", "build_database"]

# (product_id, name, category, unit price, quantity on hand, reorder level)
PRODUCTS: tuple[tuple[int, str, str, float, int, int], ...] = (
    (101, "Crystal Ball Deluxe", "magic", 89.00, 40, 10),
    (102, "Vanishing Cabinet", "magic", 1250.00, 2, 3),
    (103, "Levitation Kit", "magic", 45.50, 75, 20),
    (110, "Juggling Clubs (set of 3)", "entertainment", 29.99, 8, 15),
    (111, "Unicycle Trainer", "entertainment", 149.00, 12, 5),
    (123, "Magic Wand Pro", "magic", 59.99, 4, 25),
    (130, "Card Deck Classic", "games", 6.50, 500, 100),
    (131, "Marked Card Deck", "games", 12.00, 30, 40),
    (140, "Top Hat", "costume", 35.00, 18, 10),
    (141, "Silk Scarves (12 pack)", "costume", 22.00, 0, 12),
)

SCHEMA = """
CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    product_name TEXT NOT NULL,
    category TEXT NOT NULL,
    unit_price REAL NOT NULL
);
CREATE TABLE inventory (
    product_id INTEGER PRIMARY KEY REFERENCES products(product_id),
    quantity_on_hand INTEGER NOT NULL,
    reorder_level INTEGER NOT NULL,
    warehouse TEXT NOT NULL
);
CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    customer_name TEXT NOT NULL,
    region TEXT NOT NULL
);
CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
    order_date TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE sales (
    sale_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders(order_id),
    product_id INTEGER NOT NULL REFERENCES products(product_id),
    quantity INTEGER NOT NULL,
    total_amount REAL NOT NULL,
    sale_date TEXT NOT NULL
);
CREATE TABLE employee_salaries (
    employee_id INTEGER PRIMARY KEY,
    employee_name TEXT NOT NULL,
    salary REAL NOT NULL
);
"""

#: Tables in the file that queries may not read: the server's authorizer refuses them
#: (the document's PERMISSION_ERROR class), and the schema resource does not show them.
RESTRICTED_TABLES = frozenset({"employee_salaries"})

_REGIONS = ("north", "south", "east", "west")
_NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Leslie", "Margaret")


def build_database(connection: sqlite3.Connection, *, seed: int = 22,
                   today: datetime.date | None = None) -> None:
    """Create the tables and fill them (deterministic for a given seed and day)."""
    rng = random.Random(seed)
    day = today or datetime.date.today()
    cur = connection.cursor()
    cur.executescript(SCHEMA)
    for pid, name, category, price, on_hand, reorder in PRODUCTS:
        cur.execute("INSERT INTO products VALUES (?, ?, ?, ?)", (pid, name, category, price))
        cur.execute("INSERT INTO inventory VALUES (?, ?, ?, ?)",
                    (pid, on_hand, reorder, rng.choice(("main", "annex"))))
    for cid, name in enumerate(_NAMES, start=1):
        cur.execute("INSERT INTO customers VALUES (?, ?, ?)", (cid, f"{name} & Co", rng.choice(_REGIONS)))
    sale_id = 0
    for order_id in range(1, 121):
        # Orders over the last ~90 days, and always a few in the current month.
        date = day - datetime.timedelta(days=rng.randrange(0, 90) if order_id > 12 else rng.randrange(0, day.day))
        cur.execute("INSERT INTO orders VALUES (?, ?, ?, ?)",
                    (order_id, rng.randrange(1, len(_NAMES) + 1), date.isoformat(),
                     rng.choice(("shipped", "shipped", "delivered", "pending"))))
        for product in rng.sample(PRODUCTS, rng.randrange(1, 4)):
            sale_id += 1
            quantity = rng.randrange(1, 6)
            cur.execute("INSERT INTO sales VALUES (?, ?, ?, ?, ?, ?)",
                        (sale_id, order_id, product[0], quantity, round(quantity * product[3], 2), date.isoformat()))
    for eid, name in enumerate(_NAMES[:4], start=1):
        cur.execute("INSERT INTO employee_salaries VALUES (?, ?, ?)", (eid, name, 50000 + 1000 * eid))
    connection.commit()
